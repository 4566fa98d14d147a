-- memory-ls on Neovim 0.7 - 0.10 (no vim.lsp.config / vim.lsp.enable): one client,
-- started with vim.lsp.start_client and attached to every memory file that is opened.
local client_id = nil

local function global_store()
  local dir = vim.env.PI_CODING_AGENT_DIR
  if dir == nil or dir == '' then
    dir = '~/.pi/agent'
  end
  return vim.fn.fnamemodify(vim.fn.expand(dir), ':p'):gsub('/$', '') .. '/memory.md'
end

vim.api.nvim_create_autocmd({ 'BufReadPost', 'BufNewFile' }, {
  pattern = '*.md',
  callback = function(args)
    local path = vim.api.nvim_buf_get_name(args.buf)
    local root = path:match('^(.*)/%.pi/memory%.md$')
    if root == nil and path ~= global_store() then
      return
    end
    if client_id == nil or vim.lsp.get_client_by_id(client_id) == nil then
      root = root or vim.fn.getcwd()
      client_id = vim.lsp.start_client({
        name = 'memory_ls',
        cmd = { 'memory-ls', 'serve' },
        root_dir = root,
        workspace_folders = { { uri = vim.uri_from_fname(root), name = root } },
        settings = { memoryLs = { severity = { similar = 'hint' } } },
      })
    end
    vim.lsp.buf_attach_client(args.buf, client_id)
  end,
})
