-- memory-ls for Neovim: start the language server on memory files, and a note picker
-- over vim.ui.select that runs the server's `memory.*` commands.
--
--   require('memory_ls').setup()               -- Neovim 0.7 and later
--   require('memory_ls').setup({ cmd = { '/path/to/memory-ls', 'serve' } })
--
-- Commands: :MemoryBrowse :MemoryAdd :MemoryForget :MemoryDoctor :MemoryRecall :MemoryReload
--           :MemoryInbox (review what an agent proposed: accept, edit and accept, reject)
-- Plain `vim.lsp` configuration works without this module (see editors/nvim/README.md).
local M = {}

local NAME = 'memory_ls'

M.config = {
  cmd = { 'memory-ls', 'serve' },
  -- Sent as initializationOptions and as the `memoryLs` section of workspace/configuration:
  -- agentDir, trusted, readOnly, severity = { duplicate = 'error', similar = 'off', ... }, similarThreshold.
  settings = {},
  -- Create the :Memory* user commands.
  commands = true,
  -- Configure and start the language server. Set to false when you configure `vim.lsp`
  -- yourself (the picker and commands find any client named 'memory_ls').
  lsp = true,
}

local uv = vim.uv or vim.loop

local function agent_dir()
  local dir = M.config.settings.agentDir
  if dir == nil or dir == '' then
    dir = vim.env.PI_CODING_AGENT_DIR
  end
  if dir == nil or dir == '' then
    dir = '~/.pi/agent'
  end
  return vim.fn.fnamemodify(vim.fn.expand(dir), ':p'):gsub('/$', '')
end

--- The global store: <agent dir>/memory.md.
function M.global_store()
  return agent_dir() .. '/memory.md'
end

--- True when `path` is a memory store: a `.pi/memory.md` or the global store.
function M.is_memory_file(path)
  if path == nil or path == '' then
    return false
  end
  path = vim.fn.fnamemodify(path, ':p')
  return path:match('/%.pi/memory%.md$') ~= nil or path == M.global_store()
end

--- The folder a memory file belongs to: the parent of `.pi/` for a project store, else the cwd.
function M.root_for(path)
  local root = vim.fn.fnamemodify(path, ':p'):match('^(.*)/%.pi/memory%.md$')
  if root ~= nil and root ~= '' then
    return root
  end
  return vim.fn.getcwd()
end

-- An empty Lua table would be sent as a JSON array; the server wants objects.
local function as_object(tbl)
  if next(tbl) == nil then
    return vim.empty_dict()
  end
  return tbl
end

local function client_settings()
  return as_object(vim.tbl_extend('force', {}, M.config.settings))
end

local notify

-- The server's `memory/inbox` notification: {project = n, global = m} proposals waiting.
M.inbox_counts = { project = 0, global = 0 }

local function on_inbox(_, result)
  if type(result) ~= 'table' then
    return
  end
  local before = (M.inbox_counts.project or 0) + (M.inbox_counts.global or 0)
  M.inbox_counts = result
  local total = (result.project or 0) + (result.global or 0)
  if total > before then
    vim.schedule(function()
      notify(string.format('%d proposal(s) waiting for review (:MemoryInbox)', total))
    end)
  end
end

local function base_config()
  return {
    name = NAME,
    cmd = M.config.cmd,
    init_options = client_settings(),
    settings = { memoryLs = client_settings() },
    handlers = { ['memory/inbox'] = on_inbox },
  }
end

local function get_clients(filter)
  if vim.lsp.get_clients then
    return vim.lsp.get_clients(filter)
  end
  local found = {}
  for _, client in pairs(vim.lsp.get_active_clients()) do
    if filter == nil or filter.name == nil or client.name == filter.name then
      table.insert(found, client)
    end
  end
  return found
end

--- The running memory-ls client (the one attached to the current buffer first).
function M.client()
  local attached = get_clients({ name = NAME, bufnr = vim.api.nvim_get_current_buf() })
  if attached[1] ~= nil then
    return attached[1]
  end
  return get_clients({ name = NAME })[1]
end

local legacy_client_id = nil

local function legacy_attach(bufnr)
  -- Neovim 0.7: no vim.lsp.start; one client started with start_client, attached per buffer.
  if legacy_client_id == nil or vim.lsp.get_client_by_id(legacy_client_id) == nil then
    local config = base_config()
    config.root_dir = M.root_for(vim.api.nvim_buf_get_name(bufnr))
    config.workspace_folders = { { uri = vim.uri_from_fname(config.root_dir), name = config.root_dir } }
    legacy_client_id = vim.lsp.start_client(config)
  end
  if legacy_client_id ~= nil then
    vim.lsp.buf_attach_client(bufnr, legacy_client_id)
  end
end

local function attach(bufnr)
  local path = vim.api.nvim_buf_get_name(bufnr)
  if not M.is_memory_file(path) then
    return
  end
  if vim.lsp.start then
    local config = base_config()
    config.root_dir = M.root_for(path)
    vim.lsp.start(config, { bufnr = bufnr })
  else
    legacy_attach(bufnr)
  end
end

--- Start memory-ls on memory files and create the :Memory* commands.
function M.setup(opts)
  M.config = vim.tbl_deep_extend('force', M.config, opts or {})
  if not M.config.lsp then
    -- vim.lsp is configured elsewhere.
  elseif vim.lsp.config and vim.lsp.enable then
    -- Neovim 0.11+: the native configuration; root_dir(bufnr, on_dir) only starts on memory files.
    local config = base_config()
    config.filetypes = { 'markdown' }
    config.root_dir = function(bufnr, on_dir)
      local path = vim.api.nvim_buf_get_name(bufnr)
      if M.is_memory_file(path) then
        on_dir(M.root_for(path))
      end
    end
    vim.lsp.config(NAME, config)
    vim.lsp.enable(NAME)
  else
    local group = vim.api.nvim_create_augroup('memory_ls', { clear = true })
    vim.api.nvim_create_autocmd({ 'BufReadPost', 'BufNewFile' }, {
      group = group,
      pattern = { '*/.pi/memory.md', '*.md' },
      callback = function(args)
        attach(args.buf)
      end,
    })
    -- Buffers already open when setup() runs.
    for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
      if vim.api.nvim_buf_is_loaded(bufnr) then
        attach(bufnr)
      end
    end
  end
  if M.config.commands then
    M.create_commands()
  end
end

local function request(client, method, params, handler)
  if vim.fn.has('nvim-0.11') == 1 then
    return client:request(method, params, handler)
  end
  return client.request(method, params, handler)
end

notify = function(message, level)
  vim.notify('memory: ' .. message, level or vim.log.levels.INFO)
end

--- Run a server command: execute('memory.list', {}, function(err, result) ... end).
--- The argument is one table (sent as the command's single JSON object).
function M.execute(command, argument, callback)
  local client = M.client()
  if client == nil then
    local message = 'memory-ls is not running (open a .pi/memory.md file first)'
    if callback then
      callback({ message = message }, nil)
    else
      notify(message, vim.log.levels.ERROR)
    end
    return
  end
  local arg = vim.tbl_extend('force', {}, argument or {})
  if arg.uri == nil and client.config and client.config.root_dir then
    arg.uri = vim.uri_from_fname(client.config.root_dir)
  end
  request(client, 'workspace/executeCommand', { command = command, arguments = { as_object(arg) } }, function(err, result)
    if callback then
      callback(err, result)
    elseif err then
      notify(err.message or vim.inspect(err), vim.log.levels.ERROR)
    end
  end)
end

--- Like execute, but waits (at most timeout_ms) and returns err, result.
function M.execute_sync(command, argument, timeout_ms)
  local done, err_out, result_out = false, nil, nil
  M.execute(command, argument, function(err, result)
    done, err_out, result_out = true, err, result
  end)
  vim.wait(timeout_ms or 10000, function()
    return done
  end, 20)
  if not done then
    return { message = command .. ' timed out' }, nil
  end
  return err_out, result_out
end

local function other_scope(scope)
  return scope == 'project' and 'global' or 'project'
end

local function counts(result)
  return string.format('%d project, %d global', #(result.project or {}), #(result.global or {}))
end

local function report(err, result, done)
  if err then
    notify(err.message or vim.inspect(err), vim.log.levels.ERROR)
    return false
  end
  if result == nil then
    return false
  end
  if result.error ~= nil and result.error ~= vim.NIL then
    notify(result.error, vim.log.levels.ERROR)
    return false
  end
  if result.existing ~= nil and result.existing ~= vim.NIL then
    notify('already in memory: ' .. result.existing)
    return false
  end
  notify(done .. ' Now ' .. counts(result) .. '.')
  return true
end

--- Refresh open memory buffers after a command changed a store on disk.
local function reload_buffers()
  vim.schedule(function()
    vim.cmd('silent! checktime')
  end)
end

local function notes_of(result)
  local notes = {}
  for _, scope in ipairs({ 'project', 'global' }) do
    for _, text in ipairs(result[scope] or {}) do
      table.insert(notes, { scope = scope, text = text })
    end
  end
  return notes
end

local function run_and_report(command, argument, done)
  M.execute(command, argument, function(err, result)
    vim.schedule(function()
      if report(err, result, done) then
        reload_buffers()
      end
    end)
  end)
end

function M.forget(note)
  vim.ui.select({ 'Forget', 'Cancel' }, { prompt = 'Forget this ' .. note.scope .. ' note? ' .. note.text }, function(choice)
    if choice == 'Forget' then
      run_and_report('memory.forget', { text = note.text, scope = note.scope }, 'Removed from ' .. note.scope .. ' memory.')
    end
  end)
end

function M.edit(note)
  vim.ui.input({ prompt = 'Edit note: ', default = note.text }, function(to)
    if to ~= nil and to ~= '' and to ~= note.text then
      run_and_report('memory.update', { text = note.text, to = to, scope = note.scope }, 'Updated ' .. note.scope .. ' memory.')
    end
  end)
end

function M.move(note)
  run_and_report('memory.move', { text = note.text, scope = note.scope }, 'Moved to ' .. other_scope(note.scope) .. ' memory.')
end

function M.merge(note, notes)
  local others = vim.tbl_filter(function(other)
    return other.scope == note.scope and other.text ~= note.text
  end, notes)
  if #others == 0 then
    notify('no other ' .. note.scope .. ' note to merge with')
    return
  end
  vim.ui.select(others, {
    prompt = 'Merge with:',
    format_item = function(other)
      return other.text
    end,
  }, function(other)
    if other == nil then
      return
    end
    vim.ui.input({ prompt = 'Merged note: ', default = note.text .. '; ' .. other.text }, function(to)
      if to ~= nil and to ~= '' then
        run_and_report('memory.merge', { text = note.text, other = other.text, to = to, scope = note.scope }, 'Merged.')
      end
    end)
  end)
end

local ACTIONS = { 'edit', 'forget', 'move', 'merge' }

--- Run a server command; on success call ``on_result(result)`` in the main loop, else say
--- why (every picker and view starts this way).
local function fetch(command_name, args, on_result)
  M.execute(command_name, args, function(err, result)
    vim.schedule(function()
      if err or result == nil then
        notify(err and err.message or (command_name .. ' failed'), vim.log.levels.ERROR)
        return
      end
      on_result(result)
    end)
  end)
end

--- The note picker: every note of both scopes, tagged with its scope; then edit / forget / move / merge.
--- opts.scope = 'project' | 'global' limits the list to one scope.
function M.browse(opts)
  opts = opts or {}
  fetch('memory.list', {}, function(result)
    local notes = notes_of(result)
    local shown = vim.tbl_filter(function(note)
      return opts.scope == nil or note.scope == opts.scope
    end, notes)
    local label = opts.scope == nil and 'All' or (opts.scope == 'project' and 'Project' or 'Global')
    vim.ui.select(shown, {
      prompt = 'Memory: ' .. label .. ' · ' .. counts(result),
      format_item = function(note)
        return '[' .. note.scope .. '] ' .. note.text
      end,
    }, function(note)
      if note == nil then
        return
      end
      vim.ui.select(ACTIONS, {
        prompt = '[' .. note.scope .. '] ' .. note.text,
        format_item = function(action)
          return action == 'move' and ('move to ' .. other_scope(note.scope)) or action
        end,
      }, function(action)
        if action == 'edit' then
          M.edit(note)
        elseif action == 'forget' then
          M.forget(note)
        elseif action == 'move' then
          M.move(note)
        elseif action == 'merge' then
          M.merge(note, notes)
        end
      end)
    end)
  end)
end

-- What a reviewer cannot see for what it is: controls, format characters (bidi, zero-width,
-- Unicode tags, ...), line and paragraph separators, as inclusive code point ranges in order.
-- A copy of the server's `UNSEEN_RANGES` (memory_ls/core/text.py), which
-- tests/editors/test_hidden_characters.py checks it against.
local UNSEEN = {
  { 0x0000, 0x001F }, { 0x007F, 0x009F }, { 0x00AD, 0x00AD }, { 0x0600, 0x0605 },
  { 0x061C, 0x061C }, { 0x06DD, 0x06DD }, { 0x070F, 0x070F }, { 0x0890, 0x0891 },
  { 0x08E2, 0x08E2 }, { 0x180E, 0x180E }, { 0x200B, 0x200F }, { 0x2028, 0x202E },
  { 0x2060, 0x2064 }, { 0x2066, 0x206F }, { 0xFEFF, 0xFEFF }, { 0xFFF9, 0xFFFB },
  { 0x110BD, 0x110BD }, { 0x110CD, 0x110CD }, { 0x13430, 0x1343F }, { 0x1BCA0, 0x1BCA3 },
  { 0x1D173, 0x1D17A }, { 0xE0000, 0xE007F },
}
local NAMED_ESCAPES = { ['\n'] = '\\n', ['\r'] = '\\r', ['\t'] = '\\t' }

local function codepoint(char)
  local b = { char:byte(1, -1) }
  if #b == 1 then
    return b[1]
  elseif #b == 2 then
    return (b[1] % 32) * 64 + b[2] % 64
  elseif #b == 3 then
    return (b[1] % 16) * 4096 + (b[2] % 64) * 64 + b[3] % 64
  end
  return (b[1] % 8) * 262144 + (b[2] % 64) * 4096 + (b[3] % 64) * 64 + b[4] % 64
end

local function unseen(code)
  for _, range in ipairs(UNSEEN) do
    if code < range[1] then
      return false
    elseif code <= range[2] then
      return true
    end
  end
  return false
end

--- `text` with hidden characters shown escaped (`\u202e`), so a reviewer sees what would be stored.
function M.escape_unseen(text)
  -- One UTF-8 character at a time (a byte that starts none is left as it is).
  local escaped = text:gsub('[%z\1-\127\194-\244][\128-\191]*', function(char)
    local code = codepoint(char)
    if not unseen(code) then
      return char
    elseif NAMED_ESCAPES[char] then
      return NAMED_ESCAPES[char]
    elseif code < 0x100 then
      return string.format('\\x%02x', code)
    elseif code < 0x10000 then
      return string.format('\\u%04x', code)
    end
    return string.format('\\U%08x', code)
  end)
  return escaped
end

local function proposal_label(p)
  if p.action == 'update' then
    return M.escape_unseen(p.text) .. ' → ' .. M.escape_unseen(p.to or '')
  end
  return M.escape_unseen(p.text)
end

local function review_command(command, argument)
  M.execute(command, argument, function(err, result)
    vim.schedule(function()
      if err then
        notify(err.message or vim.inspect(err), vim.log.levels.ERROR)
        return
      end
      if result == nil then
        return
      end
      local failed = result.error ~= nil and result.error ~= vim.NIL
      notify(result.text or '', failed and vim.log.levels.WARN or vim.log.levels.INFO)
      reload_buffers()
    end)
  end)
end

--- The review picker (SPEC §12): every proposal waiting in both inboxes, then accept,
--- edit and accept, or reject it; or accept / reject them all.
function M.review()
  fetch('memory.inbox', {}, function(result)
    local items = {}
    for _, scope in ipairs({ 'project', 'global' }) do
      for _, proposal in ipairs(result[scope] or {}) do
        table.insert(items, { scope = scope, proposal = proposal })
      end
    end
    if #items == 0 then
      notify('no proposals are waiting for review')
      return
    end
    local waiting = #items
    table.insert(items, { all = 'accept' })
    table.insert(items, { all = 'reject' })
    vim.ui.select(items, {
      prompt = 'Memory inbox · ' .. waiting .. ' waiting',
      format_item = function(item)
        if item.all ~= nil then
          return item.all == 'accept' and 'Accept all' or 'Reject all'
        end
        local p = item.proposal
        return '[' .. item.scope .. '] ' .. p.action .. ': ' .. proposal_label(p) .. ' (by ' .. p.by .. ', ' .. p.at .. ')'
      end,
    }, function(item)
      if item == nil then
        return
      end
      if item.all ~= nil then
        review_command('memory.' .. item.all, { all = true })
        return
      end
      local p = item.proposal
      local choices = p.action == 'forget' and { 'accept', 'reject' } or { 'accept', 'edit and accept', 'reject' }
      vim.ui.select(choices, { prompt = p.by .. ' proposes to ' .. p.action .. ': ' .. proposal_label(p) }, function(choice)
        local argument = { id = p.id, scope = item.scope }
        if choice == 'accept' then
          review_command('memory.accept', argument)
        elseif choice == 'reject' then
          review_command('memory.reject', argument)
        elseif choice == 'edit and accept' then
          local field = p.action == 'update' and 'to' or 'text'
          vim.ui.input({ prompt = 'Accept as: ', default = p[field] }, function(value)
            if value ~= nil and value ~= '' then
              argument[field] = value
              review_command('memory.accept', argument)
            end
          end)
        end
      end)
    end)
  end)
end

function M.add(text, scope)
  local function save(note_text)
    local function with_scope(chosen)
      if chosen ~= nil then
        run_and_report('memory.add', { text = note_text, scope = chosen }, 'Added to ' .. chosen .. ' memory.')
      end
    end
    if scope ~= nil then
      with_scope(scope)
    else
      vim.ui.select({ 'project', 'global' }, { prompt = 'Scope:' }, with_scope)
    end
  end
  if text ~= nil and text ~= '' then
    save(text)
  else
    vim.ui.input({ prompt = 'New note: ' }, function(input)
      if input ~= nil and input ~= '' then
        save(input)
      end
    end)
  end
end

local function show_scratch(name, text)
  vim.cmd('new')
  local bufnr = vim.api.nvim_get_current_buf()
  vim.api.nvim_buf_set_lines(bufnr, 0, -1, false, vim.split(text, '\n', { plain = true }))
  vim.bo[bufnr].buftype = 'nofile'
  vim.bo[bufnr].bufhidden = 'wipe'
  vim.bo[bufnr].modifiable = false
  vim.bo[bufnr].filetype = 'markdown'
  pcall(vim.api.nvim_buf_set_name, bufnr, name)
end

function M.doctor()
  fetch('memory.doctor', {}, function(result)
    show_scratch('memory://doctor', result.text or vim.inspect(result.report))
  end)
end

function M.recall()
  fetch('memory.inject', {}, function(result)
    local header = string.format('<!-- recall: %d of %d bytes, %d notes, %d left out -->', result.bytes or 0,
      result.maxInjectBytes or 0, result.included or 0, #(result.omitted or {}))
    local body = (result.body == nil or result.body == vim.NIL) and '(nothing to inject)' or result.body
    show_scratch('memory://recall', header .. '\n' .. body)
  end)
end

function M.reload()
  M.execute('memory.reload', {}, function(err, _)
    vim.schedule(function()
      if err then
        notify(err.message, vim.log.levels.ERROR)
      else
        notify('reloaded both stores')
        reload_buffers()
      end
    end)
  end)
end

function M.create_commands()
  local command = vim.api.nvim_create_user_command
  command('MemoryBrowse', function(args)
    M.browse({ scope = args.args ~= '' and args.args or nil })
  end, { nargs = '?', complete = function() return { 'project', 'global' } end, desc = 'Browse memory notes' })
  command('MemoryAdd', function(args)
    M.add(args.args)
  end, { nargs = '*', desc = 'Add a memory note' })
  command('MemoryForget', function()
    M.execute('memory.list', {}, function(err, result)
      vim.schedule(function()
        if err or result == nil then
          return
        end
        vim.ui.select(notes_of(result), {
          prompt = 'Forget which note?',
          format_item = function(note) return '[' .. note.scope .. '] ' .. note.text end,
        }, function(note)
          if note ~= nil then
            M.forget(note)
          end
        end)
      end)
    end)
  end, { desc = 'Forget a memory note' })
  command('MemoryDoctor', M.doctor, { desc = 'Show the memory doctor report' })
  command('MemoryRecall', M.recall, { desc = 'Show the recall preview' })
  command('MemoryReload', M.reload, { desc = 'Re-read both memory stores' })
  command('MemoryInbox', M.review, { desc = 'Review what an agent proposed to remember' })
end

M._uv = uv
return M
