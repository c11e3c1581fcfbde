--- flemma.notify: the one way the plugin speaks to the user (every message starts with "Flemma: ").
local M = {}

local function send(level, message)
  local text = message:match("^Flemma") and message or ("Flemma: " .. message)
  -- NOTE: scheduled, so that messages raised inside callbacks (job exit, RPC) are never lost
  -- to textlock or a fast event context.
  if vim.in_fast_event() then
    vim.schedule(function()
      vim.notify(text, level)
    end)
  else
    vim.notify(text, level)
  end
end

function M.info(message)
  send(vim.log.levels.INFO, message)
end

function M.warn(message)
  send(vim.log.levels.WARN, message)
end

function M.error(message)
  send(vim.log.levels.ERROR, message)
end

return M
