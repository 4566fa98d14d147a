-- Neovim 0.11 and SPEC §13's stale-path: the diagnostic, its quick fixes, and *Edit the
-- note* (memory.reveal -> window/showDocument) putting the cursor on the stale mention.
-- Run by test_neovim.py; environment: MEMORY_FILE, RESULT_FILE, EDITORS_NVIM, TIMEOUT_MS.
local out = { errors = {}, steps = {}, titles = {} }
local timeout = tonumber(vim.env.TIMEOUT_MS or '20000')

local function request_sync(client, method, params, bufnr)
  local done, err_out, result_out = false, nil, nil
  client:request(method, params, function(err, result)
    done, err_out, result_out = true, err, result
  end, bufnr)
  vim.wait(timeout, function() return done end, 20)
  if not done then error(method .. ' timed out') end
  if err_out then error(method .. ' failed: ' .. vim.inspect(err_out)) end
  return result_out
end

local function main()
  vim.cmd('filetype on')
  vim.opt.runtimepath:append(vim.env.EDITORS_NVIM)
  require('memory_ls').setup()
  vim.cmd('edit ' .. vim.fn.fnameescape(vim.env.MEMORY_FILE))
  local bufnr = vim.api.nvim_get_current_buf()
  local client
  vim.wait(timeout, function()
    client = vim.lsp.get_clients({ bufnr = bufnr, name = 'memory_ls' })[1]
    return client ~= nil
  end, 20)
  if client == nil then error('memory_ls did not attach') end
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
  local actions = request_sync(client, 'textDocument/codeAction', {
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

local ok, failure = xpcall(main, debug.traceback)
if not ok then
  table.insert(out.errors, tostring(failure))
end
local handle = io.open(vim.env.RESULT_FILE, 'w')
handle:write(vim.fn.json_encode(out))
handle:close()
vim.cmd('qa!')
