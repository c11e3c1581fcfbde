--- flemma.guard: a chat buffer the host writes into is locked (not 'modifiable'); instead of an
--- E21 per key, an attempt to edit it gets one message saying why and how to cancel, once per
--- lock, and the attempt does nothing.
---
--- While the lock lasts the buffer has (its own mappings with the same keys are put back after):
--- - in Insert mode, what is typed is dropped (InsertCharPre), and the keys that edit without
---   inserting a character (<CR>, <BS>, <C-w>, …) do nothing;
--- - in Normal mode, the keys that change text do nothing, and those that would start typing
---   (`i`, `a`, `o`, `c`, `s`, …) enter Insert mode without changing anything, so that the words
---   typed after them are dropped too rather than run as commands; `n`/`N` without a search
---   pattern (E35) count as typing;
--- - Flemma's own keys that act on a half-written message refuse while a reply streams
---   (`M.refuse`): the fold toggle on the message being written, running or approving a call.
--- Moving, searching, yanking, folds elsewhere and `<C-c>` work as ever. See docs/ui.md.
local lazy = require("flemma.util.lazy")
local buffer = lazy.require("flemma.chat.buffer")
local config = lazy.require("flemma.config")
local notify = lazy.require("flemma.notify")
local ui = lazy.require("flemma.ui")
local M = {}

local H = {
  armed = {}, ---@type table<integer, { said: boolean, saved: table[], group: integer }>
  agent_waits = {}, ---@type table<integer, true>  buffers whose agent's request waits
}

local DESC = "Flemma: the chat is read-only while Flemma writes into it"

--- Normal-mode keys that would change the text: they do nothing.
local NORMAL_REFUSE = {
  "x",
  "X",
  "d",
  "D",
  "p",
  "P",
  "J",
  "gJ",
  "gp",
  "gP",
  "gu",
  "gU",
  "g~",
  "g?",
  "gq",
  "gw",
  "u",
  "U",
  "<C-r>",
  ".",
  "~",
  "<",
  ">",
  "=",
  "&",
  "<Del>",
}

--- Normal-mode keys that would start typing (Neovim refuses them with E21 in a buffer that is not
--- 'modifiable'): they enter Insert mode, where what is typed is dropped.
local NORMAL_TYPE = { "i", "a", "I", "A", "gi", "gI", "o", "O", "s", "S", "c", "C", "R" }

--- Insert-mode keys that edit without inserting a character (those go through InsertCharPre).
local INSERT_REFUSE = {
  "<CR>",
  "<NL>",
  "<BS>",
  "<C-h>",
  "<Del>",
  "<C-w>",
  "<C-u>",
  "<Tab>",
  "<C-t>",
  "<C-d>",
  "<C-v>",
  "<C-q>",
}

--- The key that cancels, as the user has it.
local function cancel_key()
  local ok, cfg = pcall(function()
    return config.get().keymaps
  end)
  if not ok or type(cfg) ~= "table" or cfg.enabled == false then
    return ":Flemma cancel"
  end
  local key = (cfg.normal or {}).cancel
  if key == nil then
    return "<C-c>"
  end
  if type(key) ~= "string" or key == "" then
    return ":Flemma cancel"
  end
  return key
end

--- Whether a request of the buffer's agent waits for the user (flemma.acp says so): the message
--- then says how to answer it, since its placeholder's `status=` cannot be edited while locked.
function M.agent_waits(bufnr, waits)
  H.agent_waits[bufnr] = waits or nil
end

--- The message: what is happening (from who holds the lock) and how to stop it; under 80 columns.
function M.message(bufnr)
  local owners = buffer.lock_owners(bufnr) or {}
  local key = cancel_key()
  if owners.request and H.agent_waits[bufnr] then
    return "read-only: the agent's request waits (<M-CR> allows, :Flemma tool:reject rejects)"
  end
  if owners.request then
    return string.format("read-only while the reply streams in (%s cancels it)", key)
  end
  if owners.tools then
    return string.format("read-only while tools run (%s cancels the oldest)", key)
  end
  return string.format("read-only while Flemma writes into it (%s cancels)", key)
end

--- Say it, once per lock.
local function say(bufnr)
  local armed = H.armed[bufnr]
  if not armed or armed.said then
    return
  end
  armed.said = true
  -- Scheduled: attempts arrive from InsertCharPre and <expr> mappings (textlock), and a
  -- notifier such as nvim-notify opens a window.
  vim.schedule(function()
    notify.warn(M.message(bufnr), { key = "locked" })
  end)
end

--- (The API itself, not vim.keymap.set: a lock takes some fifty keys, twice per tool loop.)
local function map(bufnr, mode, lhs, callback, expr)
  vim.api.nvim_buf_set_keymap(
    bufnr,
    mode,
    lhs,
    "",
    { callback = callback, noremap = true, nowait = true, expr = expr, desc = DESC }
  )
end

--- The buffer's own mappings of the keys the guard takes, to put back afterwards.
local function own_mappings(bufnr, keys)
  local saved = {}
  for mode, lhss in pairs(keys) do
    local wanted = {}
    for _, lhs in ipairs(lhss) do
      wanted[vim.api.nvim_replace_termcodes(lhs, true, true, true)] = true
    end
    for _, dict in ipairs(vim.api.nvim_buf_get_keymap(bufnr, mode)) do
      if wanted[vim.api.nvim_replace_termcodes(dict.lhs, true, true, true)] then
        saved[#saved + 1] = { mode = mode, dict = vim.fn.maparg(dict.lhs, mode, false, true) }
      end
    end
  end
  return saved
end

--- Take the keys of a buffer that was just locked.
function M.arm(bufnr)
  if H.armed[bufnr] or not vim.api.nvim_buf_is_valid(bufnr) then
    return
  end
  local keys =
    { n = vim.list_extend(vim.list_extend({ "n", "N", "r" }, NORMAL_REFUSE), NORMAL_TYPE), i = INSERT_REFUSE }
  local armed = {
    said = false,
    saved = own_mappings(bufnr, keys),
    group = vim.api.nvim_create_augroup("flemma.guard." .. bufnr, { clear = true }),
  }
  H.armed[bufnr] = armed
  local function refuse()
    say(bufnr)
  end
  for _, lhs in ipairs(NORMAL_REFUSE) do
    map(bufnr, "n", lhs, refuse)
  end
  for _, lhs in ipairs(NORMAL_TYPE) do
    map(bufnr, "n", lhs, function()
      say(bufnr)
      vim.cmd("startinsert")
    end)
  end
  -- `r` reads the character to put first; that character must not run as a command.
  map(bufnr, "n", "r", function()
    say(bufnr)
    pcall(vim.fn.getcharstr)
  end)
  for _, lhs in ipairs(INSERT_REFUSE) do
    map(bufnr, "i", lhs, refuse)
  end
  for _, lhs in ipairs({ "n", "N" }) do
    map(bufnr, "n", lhs, function()
      if vim.fn.getreg("/") == "" then
        say(bufnr)
        return ""
      end
      return lhs
    end, true)
  end
  vim.api.nvim_create_autocmd("InsertCharPre", {
    group = armed.group,
    buffer = bufnr,
    desc = DESC,
    callback = function()
      vim.v.char = ""
      say(bufnr)
    end,
  })
  vim.api.nvim_create_autocmd("InsertEnter", {
    group = armed.group,
    buffer = bufnr,
    desc = DESC,
    callback = refuse,
  })
end

--- Give the keys back once the buffer is unlocked (the buffer's own mappings of them too).
function M.disarm(bufnr)
  local armed = H.armed[bufnr]
  if not armed then
    return
  end
  H.armed[bufnr] = nil
  pcall(vim.api.nvim_del_augroup_by_id, armed.group)
  if not vim.api.nvim_buf_is_valid(bufnr) then
    return
  end
  for _, mode in ipairs({ "n", "i" }) do
    for _, dict in ipairs(vim.api.nvim_buf_get_keymap(bufnr, mode)) do
      -- Only the guard's own: a plugin may have mapped one of these keys meanwhile.
      if dict.desc == DESC then
        pcall(vim.api.nvim_buf_del_keymap, bufnr, mode, dict.lhs)
      end
    end
  end
  for _, entry in ipairs(armed.saved) do
    vim.api.nvim_buf_call(bufnr, function()
      pcall(vim.fn.mapset, entry.mode, false, entry.dict)
    end)
  end
end

--- For Flemma's keys and commands that edit or fold a message: while a reply streams into
--- `bufnr`, they do nothing and the message says why (once per lock). `row` (0-based) limits
--- the refusal to the message being written (the last one); without it any row counts.
---@return boolean refused
function M.refuse(bufnr, row)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  local owners = buffer.lock_owners(bufnr)
  if not (owners and owners.request) then
    return false
  end
  if row ~= nil then
    local st = ui.structure(bufnr)
    local messages = st and st.messages or {}
    local last = messages[#messages]
    if last and row < last.row then
      return false
    end
  end
  local armed = H.armed[bufnr]
  if armed and armed.said then
    return true
  end
  if armed then
    armed.said = true
  end
  notify.warn(M.message(bufnr), { key = "locked" })
  return true
end

return M
