-- memory-ls with Neovim 0.11+'s native LSP configuration (no plugin needed).
-- Put this in init.lua (or in lsp/memory_ls.lua without the vim.lsp.config call's first argument).
local function global_store()
  local dir = vim.env.PI_CODING_AGENT_DIR
  if dir == nil or dir == '' then
    dir = '~/.pi/agent'
  end
  return vim.fn.fnamemodify(vim.fn.expand(dir), ':p'):gsub('/$', '') .. '/memory.md'
end

vim.lsp.config('memory_ls', {
  cmd = { 'memory-ls', 'serve' },
  filetypes = { 'markdown' },
  -- Attach only to memory files: <repo>/.pi/memory.md and the global store.
  root_dir = function(bufnr, on_dir)
    local path = vim.api.nvim_buf_get_name(bufnr)
    local root = path:match('^(.*)/%.pi/memory%.md$')
    if root then
      on_dir(root)
    elseif path == global_store() then
      on_dir(vim.fn.getcwd())
    end
  end,
  -- The `memoryLs` section: agentDir, trusted, readOnly, severity, similarThreshold.
  settings = { memoryLs = { severity = { similar = 'hint' } } },
})
vim.lsp.enable('memory_ls')
