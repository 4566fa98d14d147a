-- memory-ls as a Neovim plugin (editors/nvim is the plugin's root: loaded by :packadd, lazy.nvim or
-- any plugin manager). Nothing starts until require('memory_ls').setup() is called, except when
-- vim.g.memory_ls holds setup()'s options: then it is called here, once.
if vim.g.loaded_memory_ls then
  return
end
vim.g.loaded_memory_ls = true

if type(vim.g.memory_ls) == 'table' then
  require('memory_ls').setup(vim.g.memory_ls)
end
