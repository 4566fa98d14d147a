-- What the Neovim drivers (nvim_driver.lua, nvim_stale_driver.lua) share: waiting for the
-- server, a request answered synchronously, and the report. Loaded with dofile() from the
-- driver's own folder; works in Neovim 0.7 and 0.11.
local M = {}

M.timeout = tonumber(vim.env.TIMEOUT_MS or '20000')

--- The memory_ls clients attached to `bufnr`.
function M.clients_for(bufnr)
  if vim.lsp.get_clients then
    return vim.lsp.get_clients({ bufnr = bufnr, name = 'memory_ls' })
  end
  local found = {}
  for _, client in pairs(vim.lsp.buf_get_clients(bufnr)) do
    if client.name == 'memory_ls' then
      table.insert(found, client)
    end
  end
  return found
end

--- The memory_ls client once it attached to `bufnr` (an error if it never does).
function M.attached(bufnr)
  vim.wait(M.timeout, function() return #M.clients_for(bufnr) > 0 end, 20)
  local client = M.clients_for(bufnr)[1]
  if client == nil then
    error('memory_ls did not attach to ' .. vim.api.nvim_buf_get_name(bufnr))
  end
  return client
end

--- `method` asked of the server, waited for; its result (an error if it fails or times out).
function M.request_sync(client, method, params, bufnr)
  local done, err_out, result_out = false, nil, nil
  local handler = function(err, result)
    done, err_out, result_out = true, err, result
  end
  if vim.fn.has('nvim-0.11') == 1 then
    client:request(method, params, handler, bufnr or 0)
  else
    client.request(method, params, handler, bufnr or 0)
  end
  vim.wait(M.timeout, function() return done end, 20)
  if not done then
    error(method .. ' timed out')
  end
  if err_out then
    error(method .. ' failed: ' .. vim.inspect(err_out))
  end
  return result_out
end

--- Run `main`, record its failure in `out.errors`, write `out` as JSON to RESULT_FILE and
--- quit (Neovim 0.7 hangs on an uncaught Lua error in headless mode).
function M.run(main, out)
  local ok, failure = xpcall(main, debug.traceback)
  if not ok then
    table.insert(out.errors, tostring(failure))
  end
  local handle = io.open(vim.env.RESULT_FILE, 'w')
  handle:write(vim.fn.json_encode(out))
  handle:close()
  vim.cmd('qa!')
end

return M
