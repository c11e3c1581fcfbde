--- flemma.notify: the one way the plugin speaks to the user (every message starts with "Flemma: ").
--- With nvim-notify installed, messages go through it with the title "Flemma" instead of the
--- prefix, and a message replaces the one of the same key still on screen (see
--- flemma.integrations.nvim_notify); otherwise through `vim.notify`.
---
--- On Neovim's own command line a message wider than the line (`v:echospace`), or of several
--- lines, would stop everything with a hit-enter prompt, so it is shortened to one line there; the
--- full text stays in `M.recent()` (`:Flemma status` lists it) and in the log. A report the user
--- asked for (`opts.report`) opens in a scratch buffer instead (flemma.ui.scratch). A message that stopped being true (an
--- approval that was given) is taken back with `M.retract(key)`.
local lazy = require("flemma.util.lazy")
local log = lazy.require("flemma.host.log")
local scratch = lazy.require("flemma.ui.scratch")
local M = {}

---@class flemma.notify.Options
---@field key string|nil
---@field report boolean|nil

local PREFIX = "Flemma: "
local ELLIPSIS = "…"
--- Shortened messages whose full text is kept.
local RECENT_MAX = 20
--- Notifier plugins that show `vim.notify` messages in windows of their own, where a long
--- message wraps instead of prompting (their module names, when one of them replaced `vim.notify`).
local FLOAT_NOTIFIERS = { "noice", "snacks", "mini.notify", "fidget", "notify" }

local H = {
  --- The last message shown on the command line: `{ key, text }`.
  shown = nil,
  --- Shortened messages, oldest first: `{ time, level, text }` with the full text.
  recent = {},
}

local function on_command_line()
  local uis = vim.api.nvim_list_uis()
  if #uis == 0 then
    -- Headless, no UI attached (a script, `nvim --headless`): nobody to prompt.
    return false
  end
  for _, ui in ipairs(uis) do
    -- A UI that draws messages itself (noice, Neovim 0.12's ui2) has no hit-enter prompt.
    if ui.ext_messages then
      return false
    end
  end
  local ok, nvim_notify = pcall(require, "flemma.integrations.nvim_notify")
  if ok and nvim_notify.is_builtin(vim.notify) then
    return true
  end
  -- `vim.notify` is replaced: by a notifier plugin (its own windows), or by a wrapper that ends in
  -- Neovim's own (a logger, a test).
  for _, name in ipairs(FLOAT_NOTIFIERS) do
    if package.loaded[name] ~= nil then
      return false
    end
  end
  return true
end

--- `text` cut in the middle (at spaces when it can) to `width` display cells: the start says what
--- happened, the end usually what to do.
---@param text string
---@param width integer
---@return string
function M.shorten(text, width)
  if vim.api.nvim_strwidth(text) <= width then
    return text
  end
  local chars = vim.fn.split(text, "\\zs")
  local room = math.max(width - 1, 2)
  local head_room = math.ceil(room * 0.6)
  local head, used = {}, 0
  for _, ch in ipairs(chars) do
    local cells = vim.api.nvim_strwidth(ch)
    if used + cells > head_room then
      break
    end
    head[#head + 1] = ch
    used = used + cells
  end
  local tail, tail_used = {}, 0
  for i = #chars, #head + 1, -1 do
    local cells = vim.api.nvim_strwidth(chars[i])
    if used + tail_used + cells > room then
      break
    end
    table.insert(tail, 1, chars[i])
    tail_used = tail_used + cells
  end
  local front, back = table.concat(head), table.concat(tail)
  -- Whole words where a space is near the cut (not losing more than a quarter of each side).
  local cut = front:match("^(.*%S)%s+%S*$")
  if cut and vim.api.nvim_strwidth(cut) >= used * 0.75 then
    front = cut
  end
  local rest = back:match("^%S*%s+(%S.*)$")
  if rest and vim.api.nvim_strwidth(rest) >= tail_used * 0.75 then
    back = rest
  end
  return front .. " " .. ELLIPSIS .. " " .. back
end

--- Keeps the full text of a message shortened on the command line (`:Flemma status`, the log).
local function keep(text, level)
  H.recent[#H.recent + 1] = { time = os.time(), level = level, text = text }
  if #H.recent > RECENT_MAX then
    table.remove(H.recent, 1)
  end
  log.write(level >= vim.log.levels.ERROR and "error" or "info", "message: " .. text)
end

--- The text to show on the command line: one line that fits (a message of several lines, or one
--- wider than the line, would stop everything with a hit-enter prompt). A shortened message is
--- kept in full.
local function fit(text, level)
  local room = math.max(vim.v.echospace, 20)
  local first, rest = text:match("^([^\n]*)\n(.*)$")
  if first then
    keep(text, level)
    local more = select(2, rest:gsub("\n", "")) + 1
    -- The end says where the rest is: shortening cuts the middle.
    local hint = string.format(" (+%d line%s: :Flemma status)", more, more == 1 and "" or "s")
    return M.shorten(first, math.max(room - vim.api.nvim_strwidth(hint), 20)) .. hint
  end
  if vim.api.nvim_strwidth(text) <= room then
    return text
  end
  keep(text, level)
  return M.shorten(text, room)
end

local function deliver(text, level, key, report)
  local ok, nvim_notify = pcall(require, "flemma.integrations.nvim_notify")
  local mod = ok and nvim_notify.module() or nil
  if mod then
    local body = text:sub(1, #PREFIX) == PREFIX and text:sub(#PREFIX + 1) or text
    if nvim_notify.send(mod, body, level, key) then
      return
    end
  end
  if on_command_line() then
    if report and (text:find("\n", 1, true) or vim.api.nvim_strwidth(text) > vim.v.echospace) then
      -- A report the user asked for, too big for the command line: read in a buffer instead.
      local body = text:sub(1, #PREFIX) == PREFIX and text:sub(#PREFIX + 1) or text
      scratch.show("flemma://" .. (key or "report"), vim.split(body, "\n", { plain = true }))
      return
    end
    text = fit(text, level)
    H.shown = { key = key, text = text }
  end
  -- `title` and `id` are read by notifiers that replace `vim.notify` (noice, snacks, …); Neovim's
  -- own ignores them.
  vim.notify(text, level, { title = "Flemma", id = key and ("flemma:" .. key) or nil })
end

local function later_if_fast(fn)
  -- NOTE: scheduled, so that messages raised inside callbacks (job exit, RPC) are never lost
  -- to textlock or a fast event context.
  if vim.in_fast_event() then
    vim.schedule(fn)
  else
    fn()
  end
end

local function send(level, message, opts)
  local text = message:match("^Flemma") and message or (PREFIX .. message)
  local key = type(opts) == "table" and type(opts.key) == "string" and opts.key or nil
  local report = type(opts) == "table" and opts.report == true
  later_if_fast(function()
    deliver(text, level, key, report)
  end)
end

--- `opts.key`: messages with the same key replace each other while one is on screen (with
--- nvim-notify, or a notifier that honours `id`), e.g. the report of a command run again.
--- `opts.report`: the user asked for this message (`:Flemma host:status`); on the command line,
--- when it does not fit on one line, it opens in the scratch buffer `flemma://<key>` (like
--- `:Flemma status`) instead. Any other message is shortened to one line there.
---@param message string
---@param opts flemma.notify.Options|nil
function M.info(message, opts)
  send(vim.log.levels.INFO, message, opts)
end

---@param message string
---@param opts flemma.notify.Options|nil
function M.warn(message, opts)
  send(vim.log.levels.WARN, message, opts)
end

---@param message string
---@param opts flemma.notify.Options|nil
function M.error(message, opts)
  send(vim.log.levels.ERROR, message, opts)
end

--- The last line of the message history (`:messages`), or nil.
local function last_message()
  local ok, result = pcall(vim.api.nvim_exec2, "messages", { output = true })
  if not ok or type(result) ~= "table" or result.output == "" then
    return nil
  end
  return result.output:match("([^\n]*)$")
end

--- Take back the message of `key` (it is not true any more): nvim-notify closes its window; on
--- the command line it is cleared, if it is still what the command line shows (no message came
--- after it, and Neovim is in Normal mode, where nothing else draws there). Notifiers that
--- replaced `vim.notify` keep it until it times out.
---@param key string
function M.retract(key)
  later_if_fast(function()
    local ok, nvim_notify = pcall(require, "flemma.integrations.nvim_notify")
    if ok and nvim_notify.close(key) then
      return
    end
    local shown = H.shown
    if not shown or shown.key ~= key then
      return
    end
    H.shown = nil
    if vim.api.nvim_get_mode().mode ~= "n" then
      return
    end
    local last = last_message()
    if last == nil or last ~= shown.text:match("([^\n]*)$") then
      return
    end
    vim.api.nvim_echo({ { "" } }, false, {})
  end)
end

--- The messages shortened on the command line, with their full text, oldest first.
---@return { time: integer, level: integer, text: string }[]
function M.recent()
  return vim.deepcopy(H.recent)
end

return M
