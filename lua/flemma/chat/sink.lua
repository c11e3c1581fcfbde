--- flemma.sink: hidden scratch buffers that receive a request's stream as it arrives, so that
--- users can watch it (`:buffer flemma://sink/…`) or hook into it (`User FlemmaSinkCreated`).
local lazy = require("flemma.util.lazy")
local hooks = lazy.require("flemma.hooks")
local M = {}

local H = { counter = 0 }

--- Create a sink named `flemma://sink/<name>#<n>`; fires `sink:created` `{bufnr, name}`.
function M.create(params)
  H.counter = H.counter + 1
  local name = string.format("flemma://sink/%s#%d", params.name:gsub("[^%w/_.-]", "_"), H.counter)
  local bufnr = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_name(bufnr, name)
  vim.bo[bufnr].bufhidden = "hide"
  vim.bo[bufnr].swapfile = false
  vim.bo[bufnr].undolevels = -1
  hooks.emit("sink:created", { bufnr = bufnr, name = name })
  return { bufnr = bufnr, name = name }
end

--- Destroy a sink; fires `sink:destroyed` `{bufnr, name}` first.
function M.destroy(params)
  local bufnr = params.bufnr
  if not vim.api.nvim_buf_is_valid(bufnr) then
    return false
  end
  local name = vim.api.nvim_buf_get_name(bufnr)
  hooks.emit("sink:destroyed", { bufnr = bufnr, name = name })
  pcall(vim.api.nvim_buf_delete, bufnr, { force = true })
  return true
end

return M
