--- flemma.buffer: applies the host's batched edits and owns buffer locks. Edits never move a
--- user's cursor (but a window at the end of a locked buffer follows it: flemma.follow), never
--- overwrite text the user changed since the host last looked, and report "retry" when Neovim
--- refuses edits right now (textlock: an <expr> mapping or a completion source waiting while
--- Neovim serves RPC). What the host writes during one lock is one undo step.
local log = require("flemma.host.log")
local locks = require("flemma.chat.locks")
local lazy = require("flemma.util.lazy")
local flemma_chat_follow = lazy.require("flemma.chat.follow")

local M = {}

local H = {
  ns_anchor = vim.api.nvim_create_namespace("flemma.anchor"),
  ns_cursor = vim.api.nvim_create_namespace("flemma.cursor"),
  anchors = {}, ---@type table<integer, table<string, integer>>
  locks = {}, ---@type table<integer, { owners: table<string, true>, modifiable: boolean }>
  --- Per locked buffer: the changedtick our last batch of the current undo step left, or nil
  --- before its first batch.
  undo = {}, ---@type table<integer, { tick: integer|nil }>
  --- Per buffer: the changedtick a write moved (`from`) and where it left it (`to`), since the
  --- host's last batch (M.wrote).
  rewritten = {}, ---@type table<integer, { from: integer, to: integer }>
}

--- Errors that mean "not now": textlock (E565), "not allowed here" (E523); E11 (command-line
--- window) for safety, though API edits are allowed there today.
local RETRY_PATTERNS = { "E565", "E11:", "E523", "textlock" }

--- A lock taken or released changes what the statusline, the bufferline and the turn gutter show.
function H.lock_changed(bufnr)
  locks.tell("changed", bufnr)
end

local function is_retryable(err)
  local text = tostring(err)
  for _, pattern in ipairs(RETRY_PATTERNS) do
    if text:find(pattern, 1, true) then
      return true
    end
  end
  return false
end

local function anchor_position(bufnr, stream)
  local per_buffer = H.anchors[bufnr]
  if not per_buffer then
    per_buffer = {}
    H.anchors[bufnr] = per_buffer
  end
  local id = per_buffer[stream]
  local last = vim.api.nvim_buf_line_count(bufnr) - 1
  if id then
    local pos = vim.api.nvim_buf_get_extmark_by_id(bufnr, H.ns_anchor, id, {})
    -- An undo can leave the mark past the end of the buffer (it is not clamped); the text then
    -- goes on at the end.
    if pos[1] and pos[1] <= last then
      return pos[1], pos[2]
    end
    pcall(vim.api.nvim_buf_del_extmark, bufnr, H.ns_anchor, id)
  end
  local text = vim.api.nvim_buf_get_lines(bufnr, last, last + 1, true)[1]
  -- right_gravity: the anchor moves past text inserted at it, so the next chunk follows this one.
  per_buffer[stream] = vim.api.nvim_buf_set_extmark(bufnr, H.ns_anchor, last, #text, { right_gravity = true })
  return last, #text
end

local function split_text(text)
  return vim.split(text, "\n", { plain = true })
end

--- Apply one op. Returns whether it applied (false: its expected text was not there) and the
--- row (0-based) its change starts at.
local function apply_op(bufnr, op)
  if op.op == "append" then
    local row, col = anchor_position(bufnr, op.stream)
    vim.api.nvim_buf_set_text(bufnr, row, col, row, col, split_text(op.text))
    return true, row
  elseif op.op == "set_lines" then
    if op.expect ~= nil and op.expect ~= vim.NIL then
      local count = vim.api.nvim_buf_line_count(bufnr)
      if op["end"] > count then
        return false
      end
      local current = vim.api.nvim_buf_get_lines(bufnr, op.start, op["end"], true)
      if not vim.deep_equal(current, op.expect) then
        return false
      end
    end
    vim.api.nvim_buf_set_lines(bufnr, op.start, op["end"], true, op.lines)
    return true, op.start
  elseif op.op == "close_stream" then
    local per_buffer = H.anchors[bufnr]
    local id = per_buffer and per_buffer[op.stream]
    if id then
      pcall(vim.api.nvim_buf_del_extmark, bufnr, H.ns_anchor, id)
      per_buffer[op.stream] = nil
    end
    return true
  end
  error("unknown edit '" .. tostring(op.op) .. "'")
end

--- Pin every cursor on this buffer to its text with an extmark, so edits cannot move it. With
--- `follow` (the buffer is locked), each pin also says how its window stands towards the end.
local function pin_cursors(bufnr, follow)
  local pins = {}
  local line_count = follow and vim.api.nvim_buf_line_count(bufnr)
  for _, win in ipairs(vim.fn.win_findbuf(bufnr)) do
    local cursor = vim.api.nvim_win_get_cursor(win)
    local line = vim.api.nvim_buf_get_lines(bufnr, cursor[1] - 1, cursor[1], false)[1] or ""
    local col = math.min(cursor[2], #line)
    pins[#pins + 1] = {
      win = win,
      cursor = cursor,
      id = vim.api.nvim_buf_set_extmark(bufnr, H.ns_cursor, cursor[1] - 1, col, { right_gravity = false }),
    }
    if follow then
      pins[#pins].stance, pins[#pins].bottom = flemma_chat_follow.stance(win, cursor[1], line_count)
    end
  end
  return pins
end

local function restore_cursors(bufnr, pins)
  for _, pin in ipairs(pins) do
    local pos = vim.api.nvim_buf_get_extmark_by_id(bufnr, H.ns_cursor, pin.id, {})
    pcall(vim.api.nvim_buf_del_extmark, bufnr, H.ns_cursor, pin.id)
    if pos[1] and vim.api.nvim_win_is_valid(pin.win) then
      local target = { pos[1] + 1, pos[2] }
      local now = vim.api.nvim_win_get_cursor(pin.win)
      if now[1] ~= target[1] or now[2] ~= target[2] then
        pcall(vim.api.nvim_win_set_cursor, pin.win, target)
      end
    end
  end
end

--- Before a batch of a locked buffer: its first batch starts a new undo step (closing whatever
--- the user's typing left open), and the next ones join it while the buffer still has the
--- changedtick our previous batch left. Anything else changing it (an undo, an edit through
--- another plugin) makes the rest a new step; `undojoin` after an undo would fail (E790).
local function undo_prepare(bufnr, step, tick_before)
  if step.tick == nil then
    vim.api.nvim_buf_call(bufnr, function()
      -- Setting 'undolevels' closes the undo block (:help undo-break).
      vim.cmd("noautocmd let &g:undolevels = &g:undolevels")
    end)
  elseif step.tick == tick_before then
    vim.api.nvim_buf_call(bufnr, function()
      pcall(vim.cmd, "undojoin")
    end)
  end
end

--- A write moved the changedtick of `bufnr` from `before` without changing its text (Neovim counts
--- the write that resets 'modified': `:help b:changedtick`). For what the host writes, it did not
--- happen: its next batch still joins the undo step of the ones before it (one `u` undoes a whole
--- reply with `editing.auto_write`, or after a `:w` while it streams), and is not taken for an
--- edit of someone else's.
---@param bufnr integer
---@param before integer the changedtick just before the write
function M.wrote(bufnr, before)
  if not vim.api.nvim_buf_is_valid(bufnr) then
    return
  end
  local after = vim.api.nvim_buf_get_changedtick(bufnr)
  if after == before then
    return
  end
  local step = H.undo[bufnr]
  if step and step.tick == before then
    step.tick = after
  end
  local rewritten = H.rewritten[bufnr]
  if rewritten and rewritten.to == before then
    rewritten.to = after
  else
    H.rewritten[bufnr] = { from = before, to = after }
  end
end

--- Apply one buffer's ops in order. Returns the result table the host expects.
local function apply_buffer(batch)
  local bufnr = batch.bufnr
  if not vim.api.nvim_buf_is_valid(bufnr) then
    return { status = "gone", done = 0 }
  end
  -- The host sends the changedtick our last batch left behind: any other value means the user (or
  -- another plugin) edited the buffer since, so what the host believes about it may be stale.
  local tick_before = vim.api.nvim_buf_get_changedtick(bufnr)
  local edited = batch.tick ~= nil and batch.tick ~= vim.NIL and batch.tick ~= tick_before
  local rewritten = H.rewritten[bufnr]
  H.rewritten[bufnr] = nil
  if edited and rewritten and rewritten.from == batch.tick and rewritten.to == tick_before then
    -- Only written since (`editing.auto_write`, a `:w`): the text is what the host left.
    edited = false
  end
  local was_modifiable = vim.bo[bufnr].modifiable
  if not was_modifiable then
    vim.bo[bufnr].modifiable = true
  end
  local lock = H.locks[bufnr]
  local step = lock and H.undo[bufnr]
  if step and #batch.ops > 0 then
    undo_prepare(bufnr, step, tick_before)
  end
  local pins = pin_cursors(bufnr, lock ~= nil)
  local done, conflicts, status, message = 0, {}, "ok", nil
  -- The lowest row a change of this batch starts at (for the "below" hint).
  local deepest = -1
  for index, op in ipairs(batch.ops) do
    local ok, applied, row = pcall(apply_op, bufnr, op)
    if not ok then
      status = is_retryable(applied) and "retry" or "error"
      message = tostring(applied)
      break
    end
    if applied == false then
      conflicts[#conflicts + 1] = index
    elseif row and row > deepest then
      deepest = row
    end
    done = index
  end
  restore_cursors(bufnr, pins)
  if step and done > 0 then
    step.tick = vim.api.nvim_buf_get_changedtick(bufnr)
  end
  if lock then
    flemma_chat_follow.after(bufnr, pins, lock.owners, deepest)
  end
  if not was_modifiable and vim.api.nvim_buf_is_valid(bufnr) then
    vim.bo[bufnr].modifiable = false
  end
  if status == "error" then
    log.write("error", string.format("buffer %d: edit %d refused: %s", bufnr, done + 1, message))
  end
  return {
    status = status,
    done = done,
    edited = edited,
    tick = vim.api.nvim_buf_get_changedtick(bufnr),
    conflicts = #conflicts > 0 and conflicts or nil,
    message = message,
  }
end

--- The host's write-queue applier: one call per frame with every buffer's pending edits.
---@param batches { bufnr: integer, tick: integer|nil, ops: table[] }[]
function M.apply_batch(batches)
  local results = {}
  for index, batch in ipairs(batches) do
    local ok, result = pcall(apply_buffer, batch)
    if not ok then
      result = { status = is_retryable(result) and "retry" or "error", done = 0, message = tostring(result) }
    end
    results[index] = result
  end
  return results
end

--- Make a buffer non-modifiable on behalf of `owner` (e.g. "request", "tool"); locks nest.
function M.lock(bufnr, owner)
  if not vim.api.nvim_buf_is_valid(bufnr) then
    return false
  end
  local lock = H.locks[bufnr]
  if not lock then
    lock = { owners = {}, modifiable = vim.bo[bufnr].modifiable }
    H.locks[bufnr] = lock
    locks.tell("locked", bufnr)
  end
  owner = owner or "host"
  if not lock.owners[owner] then
    -- A new writer (a reply, a run of tools): what it writes is an undo step of its own.
    H.undo[bufnr] = {}
  end
  lock.owners[owner] = true
  vim.bo[bufnr].modifiable = false
  H.lock_changed(bufnr)
  return true
end

--- The lock of `bufnr` is gone: its undo step and guard end with it, its hints say so.
local function released(bufnr)
  H.undo[bufnr] = nil
  flemma_chat_follow.settle(bufnr)
  locks.tell("released", bufnr)
end

--- Release `owner`'s lock; the buffer becomes modifiable again when no owner is left.
function M.unlock(bufnr, owner)
  local lock = H.locks[bufnr]
  if not lock then
    return false
  end
  lock.owners[owner or "host"] = nil
  if next(lock.owners) == nil then
    H.locks[bufnr] = nil
    if vim.api.nvim_buf_is_valid(bufnr) then
      vim.bo[bufnr].modifiable = lock.modifiable
    end
    released(bufnr)
  end
  H.lock_changed(bufnr)
  return true
end

--- Release every lock (the host exited: nothing it held may stay locked).
function M.unlock_all()
  local count = 0
  for bufnr, lock in pairs(H.locks) do
    if vim.api.nvim_buf_is_valid(bufnr) then
      vim.bo[bufnr].modifiable = lock.modifiable
    end
    released(bufnr)
    count = count + 1
  end
  H.locks = {}
  if count > 0 then
    H.lock_changed(nil)
  end
  return count
end

--- Where the host's open stream in `bufnr` ends now (0-based row and byte column), or nil when
--- none is open or nothing was appended to it yet.
function M.stream_end(bufnr)
  for _, id in pairs(H.anchors[bufnr] or {}) do
    local pos = vim.api.nvim_buf_get_extmark_by_id(bufnr, H.ns_anchor, id, {})
    if pos[1] then
      return pos[1], pos[2]
    end
  end
  return nil
end

--- Whether the buffer is locked and nothing but the host's batches changed it since the lock's
--- first one: an edit now may join their undo step.
function M.in_step(bufnr)
  local step = H.undo[bufnr]
  return step ~= nil and step.tick ~= nil and step.tick == vim.api.nvim_buf_get_changedtick(bufnr)
end

function M.is_locked(bufnr)
  return H.locks[bufnr] ~= nil
end

--- Who holds the buffer's lock (`{ request = true, tools = true, … }`; read-only), or nil.
function M.lock_owners(bufnr)
  local lock = H.locks[bufnr]
  return lock and lock.owners or nil
end

--- Forget per-buffer state of a wiped buffer.
function M.forget(bufnr)
  H.anchors[bufnr] = nil
  H.rewritten[bufnr] = nil
  locks.tell("forgotten", bufnr)
  if H.locks[bufnr] then
    H.locks[bufnr] = nil
    released(bufnr)
  end
  flemma_chat_follow.forget(bufnr)
end

return M
