--- flemma.chat: a chat buffer's keys, and what it shows of the host's parsed tree. The host sends
--- each buffer's message markers and parser diagnostics; markers become extmarks (so they follow
--- edits until the next update), diagnostics go to vim.diagnostic. `]m`, `[m`, `im` and `am` read
--- the messages of the buffer's line scan (flemma.ui.scan), which is current after every edit.
local lazy = require("flemma.util.lazy")
local guard = lazy.require("flemma.chat.guard")
local navigation = lazy.require("flemma.chat.navigation")
local config = lazy.require("flemma.config")
local host = lazy.require("flemma.host")
local notify = lazy.require("flemma.notify")
local diff = lazy.require("flemma.review.diff")
local files = lazy.require("flemma.chat.files")
local editor_state = lazy.require("flemma.host.editor_state")
local ui = lazy.require("flemma.ui")
local slash = lazy.require("flemma.slash")
local turn = require("flemma.chat.turn")
local acp = lazy.require("flemma.acp")

local M = {}

local H = {
  ns_messages = vim.api.nvim_create_namespace("flemma.messages"),
  ns_diagnostics = vim.api.nvim_create_namespace("flemma.diagnostics"),
  roles = {}, ---@type table<integer, table<integer, string>>  extmark id -> role, per buffer
  diagnosed = {}, ---@type table<integer, true>  buffers whose last structure had diagnostics
}

local SEVERITY = {
  error = vim.diagnostic.severity.ERROR,
  warning = vim.diagnostic.severity.WARN,
  info = vim.diagnostic.severity.INFO,
}

--- Marks at the markers' rows (those inside the buffer). The marks there already are kept when
--- they stand at the first rows wanted, in order (they move with edits by themselves, and a reply
--- adds markers after them): only the new ones are made; otherwise all are made again.
local function place_marks(bufnr, markers, line_count)
  local wanted = {}
  for _, marker in ipairs(markers) do
    if marker.row < line_count then
      wanted[#wanted + 1] = marker
    end
  end
  local marks = vim.api.nvim_buf_get_extmarks(bufnr, H.ns_messages, 0, -1, {})
  local kept = #marks <= #wanted
  for i = 1, kept and #marks or 0 do
    if marks[i][2] ~= wanted[i].row then
      kept = false
      break
    end
  end
  local roles = {}
  if kept then
    for i, mark in ipairs(marks) do
      roles[mark[1]] = wanted[i].role
    end
  else
    vim.api.nvim_buf_clear_namespace(bufnr, H.ns_messages, 0, -1)
  end
  for i = (kept and #marks or 0) + 1, #wanted do
    local id = vim.api.nvim_buf_set_extmark(bufnr, H.ns_messages, wanted[i].row, 0, { right_gravity = false })
    roles[id] = wanted[i].role
  end
  H.roles[bufnr] = roles
end

--- Host → Lua: a buffer's structure after a parse.
---@param params { bufnr: integer, tick: integer, markers: { row: integer, role: string, end_row: integer }[], diagnostics: table[] }
function M.set_structure(params)
  local bufnr = params.bufnr
  if not vim.api.nvim_buf_is_valid(bufnr) then
    return false
  end
  local line_count = vim.api.nvim_buf_line_count(bufnr)
  place_marks(bufnr, params.markers, line_count)
  local items = {}
  for _, diagnostic in ipairs(params.diagnostics) do
    items[#items + 1] = {
      lnum = math.min(diagnostic.lnum, line_count - 1),
      end_lnum = math.min(diagnostic.end_lnum, line_count - 1),
      col = 0,
      severity = SEVERITY[diagnostic.severity] or vim.diagnostic.severity.WARN,
      message = diagnostic.message,
      code = diagnostic.code,
      source = "flemma",
    }
  end
  -- None now and none before: nothing to tell vim.diagnostic (each `set` redraws and fires
  -- DiagnosticChanged; a long chat's structure comes after every reply and edit).
  if #items > 0 or H.diagnosed[bufnr] then
    vim.diagnostic.set(H.ns_diagnostics, bufnr, items)
    H.diagnosed[bufnr] = #items > 0 or nil
  end
  return true
end

--- The role of the message that starts at `row` (0-based), if known.
function M.role_at(bufnr, row)
  local marks = vim.api.nvim_buf_get_extmarks(bufnr, H.ns_messages, { row, 0 }, { row, 0 }, {})
  local mark = marks[1]
  return mark and (H.roles[bufnr] or {})[mark[1]] or nil
end

--- The rows (0-based) of the buffer's role markers, in order, from its line scan.
local function message_rows(bufnr)
  local rows = {}
  local structure = ui.structure(bufnr)
  for _, message in ipairs(structure and structure.messages or {}) do
    rows[#rows + 1] = message.row
  end
  return rows
end

--- Message boundaries around a 0-based row: start row of its message and of the next one.
local function message_around(bufnr, row)
  local rows = message_rows(bufnr)
  local start, next_start
  for _, r in ipairs(rows) do
    if r <= row then
      start = r
    elseif next_start == nil then
      next_start = r
    end
  end
  return start, next_start
end

--- Move to the first content line of the next (count > 0) or previous (count < 0) message.
function M.jump(count)
  local bufnr = vim.api.nvim_get_current_buf()
  local rows = message_rows(bufnr)
  local row = vim.api.nvim_win_get_cursor(0)[1] - 1
  local current = 0
  for index, r in ipairs(rows) do
    if r <= row then
      current = index
    end
  end
  local target
  if count > 0 then
    target = rows[current + count]
  else
    -- From inside a message, `[m` goes to that message's start first.
    local start = rows[current]
    local inside = start ~= nil and row > start + 1
    target = rows[current + count + (inside and 1 or 0)]
  end
  if target == nil then
    return false
  end
  local line_count = vim.api.nvim_buf_line_count(bufnr)
  vim.cmd("normal! m'")
  vim.api.nvim_win_set_cursor(0, { math.min(target + 2, line_count), 0 })
  return true
end

--- Select the message under the cursor: `inner` is its content without the marker line and
--- blank edge lines; otherwise the marker line through the line before the next message.
function M.select(inner)
  local bufnr = vim.api.nvim_get_current_buf()
  local row = vim.api.nvim_win_get_cursor(0)[1] - 1
  local start, next_start = message_around(bufnr, row)
  if start == nil then
    return false
  end
  local last = (next_start or vim.api.nvim_buf_line_count(bufnr)) - 1
  local first = start
  if inner then
    first = start + 1
    local lines = vim.api.nvim_buf_get_lines(bufnr, first, last + 1, false)
    local a, b = 1, #lines
    while a <= b and vim.trim(lines[a]) == "" do
      a = a + 1
    end
    while b >= a and vim.trim(lines[b]) == "" do
      b = b - 1
    end
    if a > b then
      return false
    end
    first, last = first + a - 1, first + b - 1
  end
  local mode = vim.fn.mode()
  if mode == "v" or mode == "V" or mode == "\22" then
    vim.cmd("normal! \27")
  end
  vim.api.nvim_win_set_cursor(0, { first + 1, 0 })
  vim.cmd("normal! V")
  vim.api.nvim_win_set_cursor(0, { last + 1, 0 })
  return true
end

--- Send the current chat buffer's conversation (`:Flemma send`).
function M.send(bufnr)
  bufnr = bufnr or vim.api.nvim_get_current_buf()
  if vim.bo[bufnr].filetype ~= "chat" then
    notify.warn("not a chat buffer")
    return false
  end
  if files.refuse(bufnr) or slash.before_send(bufnr, ui.read(bufnr)) then
    return false
  end
  -- The environment and the editor's facts as they are now (flemma.host.editor_state).
  local state = editor_state.snapshot(bufnr)
  return host.notify("chat:send", { bufnr = bufnr, ticket = turn.ticket(bufnr), state = state })
end

--- `<C-]>`: the tool cycle (placeholders, approved tools, then the send). `ticket`: the step's
--- own (Insert mode's); without one, a ticket of Normal mode.
function M.cycle(bufnr, ticket)
  bufnr = bufnr or vim.api.nvim_get_current_buf()
  if vim.bo[bufnr].filetype ~= "chat" then
    notify.warn("not a chat buffer")
    return false
  end
  -- An agent's permission requests wait (docs/agents.md): an edited status answers one, else
  -- the cursor goes to the first (nothing is sent).
  if acp.cycle(bufnr) then
    return false
  end
  -- Slash commands (flemma.slash): an unknown one refuses the send, an action runs instead.
  if files.refuse(bufnr) or slash.before_send(bufnr, ui.read(bufnr)) then
    return false
  end
  local state = editor_state.snapshot(bufnr)
  return host.notify("chat:cycle", { bufnr = bufnr, ticket = ticket or turn.ticket(bufnr), state = state })
end

--- Leave Insert mode and run `action(ticket)` on the next tick; the host's answer to the ticket
--- brings Insert mode back when the turn ended normally (`M.step_ended`). `action` returns false
--- when it could not even be sent.
function H.from_insert(bufnr, action)
  vim.cmd("stopinsert")
  vim.schedule(function()
    if not vim.api.nvim_buf_is_valid(bufnr) then
      return
    end
    local ticket = turn.ticket(bufnr, true)
    local sent = action(ticket)
    -- Refused here (not a chat buffer, no host to send it to): back at once. A notification
    -- queued until the host is up keeps its wait.
    if not sent and host.status().state ~= "waiting" then
      turn.step_ended({ bufnr = bufnr, ticket = ticket, outcome = "refused" })
    end
  end)
end

--- The turn's end (flemma.chat.turn), for the host's `chat.step_ended` and the other modules.
M.ticket = turn.ticket
M.step_ended = turn.step_ended
M.placed = turn.placed

--- `<C-]>` in Insert mode: leave Insert mode, run the step on the next tick, and come back to
--- Insert mode when the user has the word again (`M.step_ended`; docs/tools.md, "Insert mode").
function M.cycle_from_insert(bufnr)
  H.from_insert(bufnr, function(ticket)
    return M.cycle(bufnr, ticket)
  end)
end

--- `<M-CR>` in Insert mode: the call under the cursor, as `<C-]>` in Insert mode does a step.
function M.execute_from_insert(bufnr)
  H.from_insert(bufnr, function(ticket)
    return M.execute_tool(bufnr, ticket)
  end)
end

--- `<M-CR>` / `:Flemma tool:execute`: run the tool call under the cursor (`ticket`: Insert
--- mode's own; without one, a ticket of Normal mode).
function M.execute_tool(bufnr, ticket)
  bufnr = bufnr or vim.api.nvim_get_current_buf()
  if vim.bo[bufnr].filetype ~= "chat" then
    notify.warn("not a chat buffer")
    return false
  end
  -- An agent's permission request waits (docs/agents.md): this allows it. From Insert mode
  -- (`ticket`), false: no step runs, so the caller brings Insert mode back at once.
  if acp.answer(bufnr, "allow") then
    return ticket == nil
  end
  -- Not on a call in a reply still being written (its input may be half there).
  if guard.refuse(bufnr) or files.refuse(bufnr) then
    return false
  end
  local row = vim.api.nvim_win_get_cursor(0)[1] - 1
  return host.notify("tool:execute", { bufnr = bufnr, row = row, ticket = ticket or turn.ticket(bufnr) })
end

--- Cancel the running request of a chat buffer.
function M.cancel(bufnr)
  bufnr = bufnr or vim.api.nvim_get_current_buf()
  if not host.channel() then
    notify.info("Nothing to cancel")
    return false
  end
  if files.running(bufnr) then
    return files.cancel(bufnr)
  end
  return host.notify("chat:cancel", { bufnr = bufnr })
end

--- The buffer-local keymaps of a chat buffer (from the `keymaps` options), each
--- `{ modes, lhs, rhs, desc, wait }`; nil when keymaps are off. `wait`: the map waits for a longer
--- one (the fold toggle: a user's own `<Space>…` maps keep working); every other is `nowait`, so
--- that a built-in or plugin map sharing its prefix (`gd…`, `]m…`) does not make it wait
--- 'timeoutlen'.
function M.bindings(bufnr)
  local ok, cfg = pcall(function()
    return config.get().keymaps
  end)
  if not ok or type(cfg) ~= "table" or cfg.enabled == false then
    return nil
  end
  local normal = cfg.normal or {}
  local insert = cfg.insert or {}
  local list = {}
  local function map(modes, lhs, rhs, desc, wait)
    if type(lhs) == "string" and lhs ~= "" then
      list[#list + 1] = { modes = modes, lhs = lhs, rhs = rhs, desc = desc, wait = wait == true }
    end
  end
  map("n", normal.send or "<C-]>", function()
    M.cycle(bufnr)
  end, "run approved tools, or send")
  map("i", insert.send or "<C-]>", function()
    M.cycle_from_insert(bufnr)
  end, "run approved tools, or send, then back to Insert mode")
  map("n", normal.tool_execute or "<M-CR>", function()
    M.execute_tool(bufnr)
  end, "run the tool call under the cursor")
  map("i", insert.tool_execute or "<M-CR>", function()
    M.execute_from_insert(bufnr)
  end, "run the tool call under the cursor, then back to Insert mode")
  map("n", normal.tool_diff == nil and "gD" or normal.tool_diff, function()
    if not acp.diff(bufnr) then
      diff.request(bufnr)
    end
  end, "show the pending file change under the cursor as a diff")
  map("n", normal.cancel or "<C-c>", function()
    M.cancel(bufnr)
  end, "cancel the request")
  map("n", normal.message_next or "]m", function()
    for _ = 1, vim.v.count1 do
      M.jump(1)
    end
  end, "next message")
  map("n", normal.message_prev or "[m", function()
    for _ = 1, vim.v.count1 do
      M.jump(-1)
    end
  end, "previous message")
  local toggle = normal.fold_toggle
  if toggle == nil then
    toggle = "<Space>"
  end
  -- Not mapped when it is the leader key: that would swallow every leader mapping.
  if type(toggle) == "string" and not H.is_leader(toggle) then
    map("n", toggle, function()
      -- The message a reply is streaming into gets no fold before it is complete.
      if guard.refuse(bufnr, vim.api.nvim_win_get_cursor(0)[1] - 1) then
        return
      end
      ui.toggle_fold()
    end, "toggle the fold of the message", true)
  end
  local conceal = normal.conceal_toggle
  if conceal == nil then
    conceal = "<Space><Space>"
  end
  -- Not mapped when it starts with the leader key: it would hide the user's leader mappings.
  if type(conceal) == "string" and not H.starts_with_leader(conceal) then
    map("n", conceal, function()
      local level = ui.toggle_conceal()
      notify.info(level > 0 and ("conceal on (conceallevel=" .. level .. ")") or "conceal off (conceallevel=0)")
    end, "conceal on or off in this window")
  end
  -- Navigation (docs/navigation.md): tool use <-> result, and `@./file` references.
  map("n", normal.goto_definition == nil and "gd" or normal.goto_definition, function()
    navigation.goto_definition()
  end, "go to the matching tool result or use, or the referenced file")
  map("n", normal.goto_file == nil and "gf" or normal.goto_file, function()
    navigation.goto_file()
  end, "open the @./file reference under the cursor")
  local object = cfg.text_object
  if object == nil then
    object = "m"
  end
  if type(object) == "string" and object ~= "" then
    map({ "o", "x" }, "i" .. object, function()
      M.select(true)
    end, "inner message")
    map({ "o", "x" }, "a" .. object, function()
      M.select(false)
    end, "around message")
  end
  return list
end

--- Buffer-local keymaps for a chat buffer (`M.bindings`).
function M.setup_buffer(bufnr)
  ui.attach(bufnr)
  for _, b in ipairs(M.bindings(bufnr) or {}) do
    vim.keymap.set(
      b.modes,
      b.lhs,
      b.rhs,
      { buffer = bufnr, silent = true, nowait = not b.wait, desc = "Flemma: " .. b.desc }
    )
  end
end

--- Whether `lhs` is the leader key (`mapleader`, default backslash).
local function leader_keys()
  local leader = vim.g.mapleader
  if leader == nil then
    leader = "\\"
  end
  return vim.api.nvim_replace_termcodes(leader, true, true, true)
end

local function keys_of(lhs)
  return vim.api.nvim_replace_termcodes(lhs, true, true, true)
end

function H.is_leader(lhs)
  return keys_of(lhs) == leader_keys()
end

--- Whether `lhs` begins with the leader key (a map of it would hide `<leader>…` maps).
function H.starts_with_leader(lhs)
  local leader = leader_keys()
  return leader ~= "" and keys_of(lhs):sub(1, #leader) == leader
end

--- Forget a wiped buffer.
function M.forget(bufnr)
  H.roles[bufnr] = nil
  H.diagnosed[bufnr] = nil
  turn.forget(bufnr)
  files.forget(bufnr)
end

return M
