-- Drives a real headless Neovim (0.7 or 0.11) against memory-ls; run by test_neovim.py.
-- Environment: MEMORY_FILE, RESULT_FILE, MODE (plain | helper | legacy | packadd), EDITORS_NVIM,
-- PACK_DIR (packadd: a packpath entry whose pack/memory-ls/opt/memory-ls is editors/nvim), TIMEOUT_MS.
-- Writes a JSON report to RESULT_FILE and always quits (Neovim 0.7 hangs on an uncaught Lua error).
local common = dofile(debug.getinfo(1, 'S').source:sub(2):match('(.*/)') .. 'nvim_common.lua')
local out = { errors = {}, steps = {} }
local timeout = common.timeout
local file = vim.env.MEMORY_FILE
local mode = vim.env.MODE

local function step(name)
  table.insert(out.steps, name)
end

local request_sync = common.request_sync

local function memory_diagnostics(bufnr)
  local found = {}
  for _, d in ipairs(vim.diagnostic.get(bufnr)) do
    if d.source == 'memory' then
      table.insert(found, d)
    end
  end
  return found
end

local function read_file(path)
  local handle = io.open(path, 'rb')
  if handle == nil then
    return nil
  end
  local text = handle:read('*a')
  handle:close()
  return text
end

local function main()
  vim.cmd('filetype on')
  if mode == 'packadd' then
    -- editors/nvim as a plugin, the way the README installs it: :packadd, then setup().
    vim.opt.packpath:prepend(vim.env.PACK_DIR)
    vim.cmd('packadd memory-ls')
    out.plugin_loaded = vim.g.loaded_memory_ls == true
    out.module_path = vim.api.nvim_get_runtime_file('lua/memory_ls/init.lua', false)[1]
  else
    vim.opt.runtimepath:append(vim.env.EDITORS_NVIM)
  end
  local memory = require('memory_ls')
  if mode == 'plain' or mode == 'legacy' then
    -- The documented plain configuration, exactly as in editors/nvim/README.md.
    dofile(vim.env.EDITORS_NVIM .. (mode == 'plain' and '/memory_ls.lua' or '/memory_ls_legacy.lua'))
    memory.setup({ lsp = false })
  else
    memory.setup()
  end
  step('configured')

  vim.cmd('edit ' .. vim.fn.fnameescape(file))
  local bufnr = vim.api.nvim_get_current_buf()
  out.filetype = vim.bo[bufnr].filetype
  local client = common.attached(bufnr)
  out.attached = true
  out.offset_encoding = client.offset_encoding
  step('attached')

  vim.wait(timeout, function()
    local codes = {}
    for _, d in ipairs(memory_diagnostics(bufnr)) do
      codes[d.code] = true
    end
    return codes['duplicate'] and codes['too-long']
  end, 50)
  out.diagnostics = {}
  for _, d in ipairs(memory_diagnostics(bufnr)) do
    table.insert(out.diagnostics, {
      lnum = d.lnum, col = d.col, end_lnum = d.end_lnum, end_col = d.end_col,
      code = d.code, source = d.source, severity = d.severity, message = d.message,
      line = vim.api.nvim_buf_get_lines(bufnr, d.lnum, d.lnum + 1, false)[1],
    })
  end
  step('diagnostics')

  -- A quick fix for the duplicate, asked for the way `vim.lsp.buf.code_action()` asks.
  local duplicate
  for _, d in ipairs(memory_diagnostics(bufnr)) do
    if d.code == 'duplicate' then
      duplicate = d
    end
  end
  if duplicate == nil then
    error('no duplicate diagnostic')
  end
  local lsp_diagnostic = duplicate.user_data and duplicate.user_data.lsp
  if lsp_diagnostic == nil or lsp_diagnostic.range == nil then
    for _, candidate in ipairs(vim.lsp.diagnostic.get_line_diagnostics(bufnr, duplicate.lnum)) do
      if candidate.code == 'duplicate' then
        lsp_diagnostic = candidate
      end
    end
  end
  local actions = request_sync(client, 'textDocument/codeAction', {
    textDocument = { uri = vim.uri_from_bufnr(bufnr) },
    range = lsp_diagnostic.range,
    context = { diagnostics = { lsp_diagnostic }, only = { 'quickfix' } },
  }) or {}
  out.code_actions = {}
  local chosen
  for _, action in ipairs(actions) do
    table.insert(out.code_actions, { title = action.title, kind = action.kind })
    if chosen == nil and action.kind == 'quickfix' and (action.edit ~= nil or action.command ~= nil) then
      chosen = action
    end
  end
  if chosen == nil then
    error('no quick fix offered for the duplicate: ' .. vim.inspect(actions))
  end
  if chosen.edit == nil and chosen.command == nil then
    chosen = request_sync(client, 'codeAction/resolve', chosen)
  end
  out.applied = chosen.title
  if chosen.edit then
    vim.lsp.util.apply_workspace_edit(chosen.edit, client.offset_encoding)
  end
  if chosen.command then
    local command = type(chosen.command) == 'table' and chosen.command or chosen
    request_sync(client, 'workspace/executeCommand', { command = command.command, arguments = command.arguments })
  end
  vim.cmd('silent write')
  out.after_fix = read_file(file)
  step('code action applied')

  -- The server's commands through the helper (the picker uses the same path).
  local err, listed = memory.execute_sync('memory.list', {}, timeout)
  if err then error('memory.list: ' .. vim.inspect(err)) end
  out.list = listed
  err, out.add = memory.execute_sync('memory.add', { text = 'added from neovim', scope = 'project' }, timeout)
  if err then error('memory.add: ' .. vim.inspect(err)) end
  err, out.inject = memory.execute_sync('memory.inject', {}, timeout)
  if err then error('memory.inject: ' .. vim.inspect(err)) end
  step('commands')

  -- The picker over vim.ui.select: choose the "use pnpm" note, then forget, then confirm.
  local prompts = {}
  vim.ui.select = function(items, opts, on_choice)
    table.insert(prompts, opts.prompt or '')
    local format = opts.format_item or tostring
    for index, item in ipairs(items) do
      local label = format(item)
      if label:find('use pnpm', 1, true) or label == 'forget' or label == 'Forget' then
        on_choice(item, index)
        return
      end
    end
    on_choice(nil, nil)
  end
  memory.browse()
  vim.wait(timeout, function()
    local text = read_file(file) or ''
    return not text:find('use pnpm', 1, true)
  end, 50)
  out.picker_prompts = prompts
  out.after_picker = read_file(file)
  step('picker forget')

  -- The review picker (SPEC §12): a proposal waits, and is accepted from the picker.
  local proposed
  err, proposed = memory.execute_sync('memory.propose', { action = 'add', text = 'proposed from neovim \226\128\174hidden', scope = 'project' }, timeout)
  if err then error('memory.propose: ' .. vim.inspect(err)) end
  out.proposed = proposed
  local review_prompts = {}
  local review_labels = {}
  vim.ui.select = function(items, opts, on_choice)
    table.insert(review_prompts, opts.prompt or '')
    local format = opts.format_item or tostring
    for index, item in ipairs(items) do
      local label = format(item)
      table.insert(review_labels, label)
      if label:find('proposed from neovim', 1, true) or label == 'accept' then
        on_choice(item, index)
        return
      end
    end
    on_choice(nil, nil)
  end
  memory.review()
  vim.wait(timeout, function()
    return (read_file(file) or ''):find('proposed from neovim', 1, true) ~= nil
  end, 50)
  out.review_prompts = review_prompts
  out.review_labels = review_labels
  out.after_review = read_file(file)
  step('review picker accept')
end

common.run(main, out)
