-- Neovim 0.11 and SPEC §13's stale-path: the diagnostic, its quick fixes, and *Edit the
-- note* (memory.reveal -> window/showDocument) putting the cursor on the stale mention.
-- Run by test_neovim.py; environment: MEMORY_FILE, RESULT_FILE, EDITORS_NVIM, TIMEOUT_MS.
local common = dofile(debug.getinfo(1, 'S').source:sub(2):match('(.*/)') .. 'nvim_common.lua')
local out = { errors = {}, steps = {}, titles = {} }
local timeout = common.timeout

local function main()
  vim.cmd('filetype on')
  vim.opt.runtimepath:append(vim.env.EDITORS_NVIM)
  require('memory_ls').setup()
  vim.cmd('edit ' .. vim.fn.fnameescape(vim.env.MEMORY_FILE))
  local bufnr = vim.api.nvim_get_current_buf()
  local client = common.attached(bufnr)
  table.insert(out.steps, 'attached')

  local stale
  vim.wait(timeout, function()
    for _, d in ipairs(vim.diagnostic.get(bufnr)) do
      if d.code == 'stale-path' then stale = d end
    end
    return stale ~= nil
  end, 50)
  if stale == nil then
    local codes = {}
    for _, d in ipairs(vim.diagnostic.get(bufnr)) do table.insert(codes, tostring(d.code)) end
    error('no stale-path diagnostic among: ' .. table.concat(codes, ', ') .. ' root: '
      .. tostring(client.config.root_dir) .. ' refresh: '
      .. vim.inspect(vim.tbl_get(client.capabilities, 'workspace', 'diagnostics')))
  end
  out.stale = { lnum = stale.lnum, col = stale.col, end_col = stale.end_col, message = stale.message }
  table.insert(out.steps, 'diagnostic')

  local lsp_diagnostic = stale.user_data and stale.user_data.lsp
  if lsp_diagnostic == nil then error('the diagnostic kept no LSP form') end
  local actions = common.request_sync(client, 'textDocument/codeAction', {
    textDocument = { uri = vim.uri_from_bufnr(bufnr) },
    range = lsp_diagnostic.range,
    context = { diagnostics = { lsp_diagnostic }, only = { 'quickfix' } },
  }, bufnr)
  local edit
  for _, action in ipairs(actions or {}) do
    table.insert(out.titles, action.title)
    if action.title == 'Edit the note' then edit = action end
  end
  if edit == nil then error('no "Edit the note" action') end
  table.insert(out.steps, 'code actions')

  -- As vim.lsp.buf.code_action() applies a chosen action that holds a command.
  vim.api.nvim_win_set_cursor(0, { 1, 0 })
  client:exec_cmd(edit.command, { bufnr = bufnr })
  vim.wait(timeout, function()
    return vim.api.nvim_win_get_cursor(0)[1] - 1 == stale.lnum
  end, 20)
  local cursor = vim.api.nvim_win_get_cursor(0)
  out.cursor = { cursor[1] - 1, cursor[2] }
  out.line = vim.api.nvim_buf_get_lines(bufnr, stale.lnum, stale.lnum + 1, false)[1]
  table.insert(out.steps, 'revealed')
end

common.run(main, out)
