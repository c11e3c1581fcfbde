--- flemma.attention: tells the user that a chat needs them (a call waits for approval, a turn
--- finished, a request failed) when they are looking elsewhere: another window's buffer is
--- current, or Neovim lost focus. One signal per event: the `User FlemmaAttention` autocmd (and
--- `hooks.on("attention")`), then the terminal's own notification (OSC 777 / OSC 9, through tmux),
--- else the bell, and `attention.command` when set (docs/ui.md, "Attention").
local log = require("flemma.host.log")
local lazy = require("flemma.util.lazy")
local flemma_config = lazy.require("flemma.config")
local hooks = lazy.require("flemma.hooks")
local notify = lazy.require("flemma.notify")

local M = {}

-- NOTE: a terminal reports focus only while focus reporting is on (Neovim's TUI turns it on);
-- without reports Neovim counts as focused, so only the current buffer decides.
local H = { focused = true }

local MAX_TEXT = 200

--- Text safe inside an OSC string: no control characters (an ESC or BEL would end the sequence
--- early and let the rest reach the terminal as commands), on one line, of bounded length.
---@param text string
---@return string
function M.clean(text)
  local cleaned = tostring(text):gsub("%c", " ")
  if #cleaned > MAX_TEXT then
    -- Cut where a character starts (the byte after the cut is no UTF-8 continuation byte).
    local cut = MAX_TEXT
    while cut > 0 and cleaned:byte(cut + 1) >= 0x80 and cleaned:byte(cut + 1) < 0xC0 do
      cut = cut - 1
    end
    cleaned = cleaned:sub(1, cut)
  end
  return cleaned
end

--- The escape sequence of a notification: `osc777` (`ESC ] 777 ; notify ; title ; body BEL`,
--- urxvt, foot, Ghostty, WezTerm), `osc9` (`ESC ] 9 ; text BEL`, iTerm2, kitty, WezTerm,
--- Ghostty) or `bell` (`BEL`). `tmux`: wrapped for tmux's passthrough (`ESC P tmux ; … ESC \`,
--- every ESC inside doubled), which forwards it to the terminal tmux runs in (tmux 3.3 and later
--- need `set -g allow-passthrough on`). A bell is not wrapped: tmux rings it by itself.
---@param kind "osc777"|"osc9"|"bell"
---@param message string
---@param tmux boolean|nil
---@return string
function M.sequence(kind, message, tmux)
  local seq
  if kind == "osc777" then
    seq = "\027]777;notify;Flemma;" .. M.clean(message) .. "\007"
  elseif kind == "osc9" then
    -- The prefix keeps a text such as "4;…" from reading as ConEmu's progress sub-command.
    seq = "\027]9;Flemma: " .. M.clean(message) .. "\007"
  elseif kind == "bell" then
    return "\007"
  else
    error("unknown notification kind " .. tostring(kind))
  end
  if tmux then
    seq = "\027Ptmux;" .. seq:gsub("\027", "\027\027") .. "\027\\"
  end
  return seq
end

--- Which notification the terminal understands, from what it leaves in the environment (these
--- variables survive into a tmux session started from it); nil when it is not known to.
---@param env table<string, string|nil>
---@return "osc777"|"osc9"|nil
function M.detect(env)
  local function set(name)
    return (env[name] or "") ~= ""
  end
  local term = env.TERM or ""
  local program = env.TERM_PROGRAM or ""
  if program == "iTerm.app" or env.LC_TERMINAL == "iTerm2" then
    return "osc9"
  end
  if term == "xterm-kitty" or set("KITTY_WINDOW_ID") then
    return "osc9"
  end
  if program == "WezTerm" or set("WEZTERM_PANE") then
    return "osc777"
  end
  if program == "ghostty" or term == "xterm-ghostty" or set("GHOSTTY_RESOURCES_DIR") then
    return "osc777"
  end
  if term:match("^foot") or term:match("^rxvt%-unicode") then
    return "osc777"
  end
  return nil
end

--- Whether a terminal shows this Neovim: a UI whose output is a tty (the TUI). A headless
--- Neovim, or one driven only by a GUI or over RPC, has none, and nothing is written.
local function has_terminal()
  for _, ui in ipairs(vim.api.nvim_list_uis()) do
    if ui.stdout_tty then
      return true
    end
  end
  return false
end

--- Write raw bytes to the terminal the TUI runs in. Neovim 0.12 has `nvim_ui_send` (the TUI
--- writes what it is sent); in 0.10 and 0.11 the server shares the TUI's stderr, which is the
--- terminal (Neovim's own OSC 52 clipboard writes there the same way).
---@param bytes string
---@return boolean written
function M.write(bytes)
  if not has_terminal() then
    return false
  end
  local ok, err
  if vim.api.nvim_ui_send then
    ok, err = pcall(vim.api.nvim_ui_send, bytes)
  else
    ok, err = pcall(vim.api.nvim_chan_send, 2, bytes)
  end
  if not ok then
    log.write("warn", "attention: writing to the terminal failed: " .. tostring(err))
  end
  return ok
end

local function chat_name(bufnr)
  local name = vim.api.nvim_buf_is_valid(bufnr) and vim.api.nvim_buf_get_name(bufnr) or ""
  if name == "" then
    return "[No Name]"
  end
  return vim.fn.fnamemodify(name, ":t")
end

--- The text of a signal: the chat's file name and what happened.
---@param reason string
---@param bufnr integer
---@param tools string[]|nil
---@return string
function M.message(reason, bufnr, tools)
  local name = chat_name(bufnr)
  if reason == "approval" then
    tools = tools or {}
    if #tools == 1 then
      return string.format("%s: %s waits for approval", name, tools[1])
    end
    return string.format("%s: %d tool calls wait for approval", name, #tools)
  elseif reason == "failed" then
    return name .. ": the request failed"
  end
  return name .. ": the reply is finished"
end

--- Whether the user is looking at this chat right now.
---@param bufnr integer
---@return boolean
function M.watching(bufnr)
  return H.focused and vim.api.nvim_get_current_buf() == bufnr
end

local function run_command(command, data)
  local argv = {}
  for index, arg in ipairs(command) do
    argv[index] = (
      arg:gsub("{(%w+)}", function(key)
        local value = data[key]
        return value ~= nil and tostring(value) or "{" .. key .. "}"
      end)
    )
  end
  local ok, err = pcall(vim.system, argv, { detach = true, text = true }, function(result)
    if result.code ~= 0 then
      log.write("warn", string.format("attention.command %s exited with %d", argv[1], result.code))
    end
  end)
  if not ok then
    log.write("warn", "attention.command failed: " .. tostring(err))
    notify.warn("attention.command failed: " .. tostring(err))
  end
end

--- The host's signal (`attention.signal`): tell the user, unless they are watching the chat.
---@param params { bufnr: integer, reason: "approval"|"finished"|"failed", tools: string[]|nil }
function M.signal(params)
  local config = (flemma_config.get() or {}).attention or {}
  if config.enabled == false or type(params) ~= "table" then
    return
  end
  local bufnr = params.bufnr
  if type(bufnr) ~= "number" or not vim.api.nvim_buf_is_valid(bufnr) or M.watching(bufnr) then
    return
  end
  local tools = type(params.tools) == "table" and params.tools or nil
  local message = M.message(params.reason, bufnr, tools)
  local data = { reason = params.reason, bufnr = bufnr, message = message }
  hooks.emit("attention", data)
  local kind = config.terminal
  if kind == "auto" then
    kind = M.detect(vim.fn.environ())
  end
  local tmux = (vim.env.TMUX or "") ~= ""
  if kind == "osc777" or kind == "osc9" then
    M.write(M.sequence(kind, message, tmux))
  elseif config.bell ~= false then
    M.write(M.sequence("bell", message))
  end
  if type(config.command) == "table" and #config.command > 0 then
    run_command(config.command, data)
  end
end

function M.bootstrap()
  local group = vim.api.nvim_create_augroup("flemma.attention", { clear = true })
  vim.api.nvim_create_autocmd("FocusLost", {
    group = group,
    desc = "Flemma: signal a chat that needs you while Neovim is in the background",
    callback = function()
      H.focused = false
    end,
  })
  vim.api.nvim_create_autocmd("FocusGained", {
    group = group,
    desc = "Flemma: no signals for the current chat while Neovim has focus",
    callback = function()
      H.focused = true
    end,
  })
end

return M
