--- flemma.notify: the one way the plugin speaks to the user (every message starts with "Flemma: ").
--- With nvim-notify installed, messages go through it with the title "Flemma" instead of the
--- prefix, and a message replaces the one of the same key still on screen (see
--- flemma.integrations.nvim_notify); otherwise through `vim.notify`.
local M = {}

local PREFIX = "Flemma: "

local function deliver(text, level, key)
  local ok, nvim_notify = pcall(require, "flemma.integrations.nvim_notify")
  local mod = ok and nvim_notify.module() or nil
  if mod then
    local body = text:sub(1, #PREFIX) == PREFIX and text:sub(#PREFIX + 1) or text
    if nvim_notify.send(mod, body, level, key) then
      return
    end
  end
  -- `title` and `id` are read by notifiers that replace `vim.notify` (noice, snacks, …); Neovim's
  -- own ignores them.
  vim.notify(text, level, { title = "Flemma", id = key and ("flemma:" .. key) or nil })
end

local function send(level, message, opts)
  local text = message:match("^Flemma") and message or (PREFIX .. message)
  local key = type(opts) == "table" and type(opts.key) == "string" and opts.key or nil
  -- NOTE: scheduled, so that messages raised inside callbacks (job exit, RPC) are never lost
  -- to textlock or a fast event context.
  if vim.in_fast_event() then
    vim.schedule(function()
      deliver(text, level, key)
    end)
  else
    deliver(text, level, key)
  end
end

--- `opts.key`: messages with the same key replace each other while one is on screen (with
--- nvim-notify, or a notifier that honours `id`), e.g. the report of a command run again.
---@param message string
---@param opts { key: string|nil }|nil
function M.info(message, opts)
  send(vim.log.levels.INFO, message, opts)
end

---@param message string
---@param opts { key: string|nil }|nil
function M.warn(message, opts)
  send(vim.log.levels.WARN, message, opts)
end

---@param message string
---@param opts { key: string|nil }|nil
function M.error(message, opts)
  send(vim.log.levels.ERROR, message, opts)
end

return M
