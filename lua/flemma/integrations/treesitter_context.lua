--- flemma.integrations.treesitter_context: no nvim-treesitter-context window in chat buffers (a
--- chat is a sequence of messages; the Markdown section above the cursor is noise there).
---
--- treesitter-context asks its `on_attach(bufnr)` option whether to follow a buffer it reads
--- (false: do not). With `integrations.treesitter_context.enabled`, Flemma puts its own check in
--- front of the configured `on_attach` (the user's still decides for every other buffer) before
--- each `.chat` file is read. `on_attach` and `wrap()` are for configuring it by hand instead.
local lazy = require("flemma.util.lazy")
local flemma_config = lazy.require("flemma.config")
local M = {}

local H = {
  wrapper = nil, ---@type function|nil  the on_attach Flemma installed
  inner = nil, ---@type function|nil  the on_attach it wraps
}

--- A chat buffer, also while it is read (treesitter-context may ask before the filetype is set).
---@param bufnr integer
---@return boolean
function M.is_chat(bufnr)
  if bufnr == nil or bufnr == 0 then
    bufnr = vim.api.nvim_get_current_buf()
  end
  if not vim.api.nvim_buf_is_valid(bufnr) then
    return false
  end
  local filetype = vim.bo[bufnr].filetype
  if filetype == "chat" then
    return true
  end
  return filetype == "" and vim.api.nvim_buf_get_name(bufnr):match("%.chat$") ~= nil
end

--- treesitter-context's `on_attach`: false for chat buffers, true for any other.
---@param bufnr integer
---@return boolean
function M.on_attach(bufnr)
  return not M.is_chat(bufnr)
end

--- An `on_attach` that refuses chat buffers and asks `fn` about the others.
---@param fn (fun(bufnr: integer): boolean|nil)|nil
---@return fun(bufnr: integer): boolean
function M.wrap(fn)
  return function(bufnr)
    if M.is_chat(bufnr) then
      return false
    end
    if type(fn) ~= "function" then
      return true
    end
    -- treesitter-context attaches unless the answer is false.
    return fn(bufnr) ~= false
  end
end

local function enabled()
  local ok, value = pcall(function()
    return flemma_config.get().integrations.treesitter_context.enabled
  end)
  return not ok or value ~= false
end

--- Put Flemma's check in front of treesitter-context's configured `on_attach`, when
--- treesitter-context is loaded and has a configuration module (current versions). Again after
--- the user configured it anew. Cheap; run before each `.chat` file is read.
---@return boolean installed  Flemma's check is in place
function M.ensure()
  local config = package.loaded["treesitter-context.config"]
  if type(config) ~= "table" or type(config.update) ~= "function" then
    return false
  end
  local current = config.on_attach
  if not enabled() then
    -- Turned off after it was installed: give the user's own back.
    if H.wrapper ~= nil and current == H.wrapper then
      pcall(config.update, { on_attach = H.inner or false })
    end
    H.wrapper, H.inner = nil, nil
    return false
  end
  if H.wrapper ~= nil and current == H.wrapper then
    return true
  end
  H.inner = type(current) == "function" and current or nil
  H.wrapper = M.wrap(H.inner)
  return pcall(config.update, { on_attach = H.wrapper })
end

return M
