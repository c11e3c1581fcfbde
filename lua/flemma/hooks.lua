--- flemma.hooks: lifecycle events. `domain:action` names are delivered to `hooks.on` subscribers
--- (first, in registration order) and then as `User` autocmds with the derived pattern.
local log = require("flemma.host.log")
local notify = require("flemma.notify")

local M = {}

local H = { subscribers = {}, next_id = 0, patterns = {} }

--- `request:sending` → `FlemmaRequestSending`, `tool-use:completed` → `FlemmaToolUseCompleted`.
---@param name string
---@return string
function M.pattern(name)
  local known = H.patterns[name]
  if known then
    return known
  end
  local words = {}
  for word in name:gmatch("[^:%-]+") do
    words[#words + 1] = word:sub(1, 1):upper() .. word:sub(2)
  end
  local pattern = "Flemma" .. table.concat(words)
  H.patterns[name] = pattern
  return pattern
end

---@class flemma.hooks.Handle
---@field off fun(self: flemma.hooks.Handle): boolean

--- Subscribe to an event; returns a handle whose `:off()` unsubscribes (true if it was active).
---@param name string
---@param callback fun(data: table)
---@return flemma.hooks.Handle
function M.on(name, callback)
  vim.validate({ name = { name, "string" }, callback = { callback, "function" } })
  H.next_id = H.next_id + 1
  local id = H.next_id
  local list = H.subscribers[name] or {}
  H.subscribers[name] = list
  list[#list + 1] = { id = id, fn = callback }
  return {
    off = function()
      local current = H.subscribers[name] or {}
      for index, entry in ipairs(current) do
        if entry.id == id then
          table.remove(current, index)
          return true
        end
      end
      return false
    end,
  }
end

local function report(what, err)
  local message = string.format("%s failed: %s", what, tostring(err))
  log.write("error", message)
  notify.warn(message)
end

--- Deliver an event. `data` is always a table in subscribers and in `ev.data`.
---@param name string
---@param data table|nil
function M.emit(name, data)
  if type(data) ~= "table" or data == vim.NIL then
    data = vim.empty_dict()
  end
  local subscribers = H.subscribers[name]
  if subscribers and #subscribers > 0 then
    -- Copy the list: a subscriber may unsubscribe itself (or others) while we iterate.
    for _, entry in ipairs({ unpack(subscribers) }) do
      local ok, err = pcall(entry.fn, data)
      if not ok then
        report(string.format("hooks.on('%s') subscriber", name), err)
      end
    end
  end
  local pattern = M.pattern(name)
  -- NOTE: Neovim reports an error raised inside an autocmd callback itself (and goes on with the
  -- other autocmds) instead of raising it here; v:errmsg is how we learn of it for the log.
  local errmsg = vim.v.errmsg
  vim.v.errmsg = ""
  local ok, err = pcall(vim.api.nvim_exec_autocmds, "User", { pattern = pattern, data = data, modeline = false })
  if not ok then
    report(string.format("User %s autocmd", pattern), err)
  elseif vim.v.errmsg ~= "" then
    log.write("error", string.format("User %s autocmd failed: %s", pattern, vim.v.errmsg))
  end
  if vim.v.errmsg == "" then
    vim.v.errmsg = errmsg
  end
end

--- Number of subscribers of an event (for status and tests).
function M.count(name)
  return #(H.subscribers[name] or {})
end

return M
