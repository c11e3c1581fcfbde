--- flemma.integrations.nvim_notify: Flemma's messages through rcarriga/nvim-notify when it is
--- installed: titled "Flemma", and a message with the same key as one still on screen replaces
--- it in place instead of stacking a new window. Used by flemma.notify.
local lazy = require("flemma.util.lazy")
local flemma_config = lazy.require("flemma.config")
local M = {}

local H = {
  open = {}, ---@type table<string, { record: table }>  notifications on screen, by key
  require_failed = false,
}

local TITLE = "Flemma"

local function options()
  local ok, config = pcall(function()
    return flemma_config.get().integrations.nvim_notify
  end)
  if ok and type(config) == "table" then
    return config
  end
  return { enabled = true }
end

--- Whether a function is Neovim's own `vim.notify` (and not a replacement of another plugin).
function M.is_builtin(fn)
  if type(fn) ~= "function" then
    return false
  end
  local info = debug.getinfo(fn, "S")
  local source = info and info.source
  if type(source) ~= "string" then
    return false
  end
  -- Neovim 0.10 and 0.11 name the runtime file; 0.12 runs its core from stripped bytecode ("?").
  return source:find("vim/_editor.lua", 1, true) ~= nil
    or source:find("vim/_core/editor.lua", 1, true) ~= nil
    or source == "?"
end

local function is_nvim_notify(mod)
  -- Another module named "notify" is not nvim-notify.
  return type(mod) == "table" and type(mod.notify) == "function" and type(mod.dismiss) == "function"
end

--- The nvim-notify module when it is installed and is the one to use, else nil: when
--- `vim.notify` is nvim-notify, or Neovim's own (nvim-notify is then loaded if installed). Not
--- when `vim.notify` belongs to another plugin (noice, snacks, fidget, …): that is the user's
--- choice of notifier, and flemma.notify goes through `vim.notify`.
function M.module()
  if options().enabled == false then
    return nil
  end
  local mod = package.loaded["notify"]
  local current = vim.notify
  if is_nvim_notify(mod) and (current == mod or current == mod.notify) then
    return mod
  end
  if not M.is_builtin(current) then
    return nil
  end
  if mod == nil and not H.require_failed then
    local ok, loaded = pcall(require, "notify")
    if ok then
      mod = loaded
    else
      H.require_failed = true
    end
  end
  return is_nvim_notify(mod) and mod or nil
end

--- Show a message with nvim-notify. `key` identifies messages that replace each other while
--- one is on screen (by default the text and level: a repeated message does not stack).
---@param mod table  the module from `M.module()`
---@param message string  without the "Flemma: " prefix (the title says it)
---@param level integer
---@param key string|nil
---@return boolean shown
function M.send(mod, message, level, key)
  key = key or (tostring(level) .. "\0" .. message)
  local entry = { record = nil, message = message, level = level, win = nil }
  local opts = {
    title = TITLE,
    -- The window, so that a message that stops being true can be closed (`M.close`).
    on_open = function(win)
      entry.win = win
    end,
    on_close = function()
      if H.open[key] == entry then
        H.open[key] = nil
      end
    end,
  }
  local icon = options().icon
  if type(icon) == "string" and icon ~= "" then
    opts.icon = icon
  end
  local previous = H.open[key]
  if previous and previous.record then
    opts.replace = previous.record
    -- A replaced notification keeps its window (nvim-notify opens none).
    entry.win = previous.win
  end
  local ok, record = pcall(mod.notify, message, level, opts)
  if not ok then
    -- A replaced notification that went away in between, or nvim-notify failing: plainly.
    if opts.replace then
      opts.replace = nil
      ok, record = pcall(mod.notify, message, level, opts)
    end
    if not ok then
      return false
    end
  end
  if type(record) == "table" and record.id ~= nil then
    entry.record = record
    H.open[key] = entry
  end
  return true
end

--- Close the notification of `key` if it is still on screen (it is not true any more): its
--- window is closed, as the user would close it; one still waiting for a window is replaced by
--- itself with a timeout that has run out. Returns whether nvim-notify is in use.
---@param key string
---@return boolean
function M.close(key)
  local mod = M.module()
  if mod == nil then
    return false
  end
  local entry = H.open[key]
  if entry and entry.record then
    H.open[key] = nil
    if entry.win and vim.api.nvim_win_is_valid(entry.win) then
      pcall(vim.api.nvim_win_close, entry.win, true)
    else
      pcall(mod.notify, entry.message, entry.level, { title = TITLE, replace = entry.record, timeout = 1 })
    end
  end
  return true
end

return M
