--- flemma.cutoff: a reply whose host stopped while it streamed (docs/context.md, "When the host
--- stops"). A cancel or a failure ends a reply with the interrupted marker and the next `@You:`;
--- a host that crashed cannot, so Lua does it for it: with what the chat's recovery record holds
--- beyond the chat (the record's own ending), or else with the ending the restarted host writes
--- for the reply as the chat holds it (`chat:cut-off`): Lua reads where the reply starts and
--- ends, never the grammar. Nothing waits: the buffer is unlocked at once, the marker goes where
--- the reply ended (an extmark) when the host answers, and joins the reply's undo step when
--- nothing changed the buffer meanwhile.
local notify = require("flemma.notify")
local locks = require("flemma.chat.locks")
local lazy = require("flemma.util.lazy")
local buffer = lazy.require("flemma.chat.buffer")
local recovery = lazy.require("flemma.chat.recovery")
local host = lazy.require("flemma.host")
local log = lazy.require("flemma.host.log")

local M = {}

local H = {
  ns = vim.api.nvim_create_namespace("flemma.cutoff"),
  --- Replies streaming now: the extmark on their `@Assistant:` row and how many rows their
  --- opening added (the `@Assistant:` line, and a blank line before it after a line of text).
  replies = {}, ---@type table<integer, { mark: integer, added: integer }>
}

--- `send.begin`: a reply starts at `row` (its `@Assistant:` line), its opening at `from`.
---@param bufnr integer
---@param row integer
---@param from integer|nil
function M.begin(bufnr, row, from)
  M.finish(bufnr)
  if not vim.api.nvim_buf_is_valid(bufnr) or type(row) ~= "number" then
    return
  end
  local added = type(from) == "number" and row - from or 0
  local ok, mark = pcall(vim.api.nvim_buf_set_extmark, bufnr, H.ns, row, 0, {})
  if ok then
    H.replies[bufnr] = { mark = mark, added = added }
  end
end

--- `send.finish`: the reply ended as its host ended it.
---@param bufnr integer
function M.finish(bufnr)
  local reply = H.replies[bufnr]
  H.replies[bufnr] = nil
  if reply and vim.api.nvim_buf_is_valid(bufnr) then
    pcall(vim.api.nvim_buf_del_extmark, bufnr, H.ns, reply.mark)
  end
end

local function name_of(bufnr)
  local name = vim.api.nvim_buf_get_name(bufnr)
  return name == "" and string.format("buffer %d", bufnr) or vim.fn.fnamemodify(name, ":t")
end

--- Replace rows with the host's own applier, in the reply's undo step (the buffer is still locked).
local function set_lines(bufnr, start, stop, lines, expect)
  local op = { op = "set_lines", start = start, ["end"] = stop, lines = lines, expect = expect or vim.NIL }
  local result = buffer.apply_batch({ { bufnr = bufnr, tick = vim.NIL, ops = { op } } })[1]
  return result and result.status == "ok" and result.done == 1 and result.conflicts == nil
end

--- The restarted host's ending goes where the reply ended, if that place is still there.
local function place(cut, ending)
  local bufnr = cut.bufnr
  if not vim.api.nvim_buf_is_loaded(bufnr) then
    return false
  end
  local pos = vim.api.nvim_buf_get_extmark_by_id(bufnr, H.ns, cut.stop, {})
  pcall(vim.api.nvim_buf_del_extmark, bufnr, H.ns, cut.stop)
  if not pos[1] or buffer.is_locked(bufnr) then
    return false
  end
  local modifiable = vim.bo[bufnr].modifiable
  vim.bo[bufnr].modifiable = true
  local ok = pcall(vim.api.nvim_buf_call, bufnr, function()
    if cut.joinable and vim.api.nvim_buf_get_changedtick(bufnr) == cut.tick then
      -- Nothing changed the buffer since the reply's last batch: the marker is part of its step.
      pcall(vim.cmd, "undojoin")
    end
    vim.api.nvim_buf_set_text(bufnr, pos[1], pos[2], pos[1], pos[2], vim.split(ending, "\n", { plain = true }))
  end)
  vim.bo[bufnr].modifiable = modifiable
  return ok
end

local STOPPED = "%s: the host stopped while the reply streamed"

--- Ask the restarted host for the reply's ending (later: the host is being restarted).
local function ask(cut, content)
  host.call("chat:cut-off", { content = content }, function(err, answer)
    local name = name_of(cut.bufnr)
    if err or type(answer) ~= "table" or type(answer.ending) ~= "string" then
      pcall(vim.api.nvim_buf_del_extmark, cut.bufnr, H.ns, cut.stop)
      notify.warn(
        string.format(
          STOPPED .. "; it is cut off where it ends, not marked as interrupted (the host did not answer: %s). Log: %s",
          name,
          tostring(err or "no answer"),
          log.path()
        )
      )
      return
    end
    if not place(cut, answer.ending) then
      notify.warn(string.format(STOPPED .. "; the chat changed since, so its end is not marked.", name))
      return
    end
    notify.warn(
      string.format(STOPPED .. "; what arrived is kept, marked as interrupted. Send again for a new reply.", name)
    )
  end)
end

--- One reply whose host exited (the buffer still locked): marked now from the record, or later
--- from the restarted host's answer. Returns what to ask the host, or nil.
local function cut_off(bufnr, reply)
  local owners = buffer.lock_owners(bufnr)
  local pos = vim.api.nvim_buf_get_extmark_by_id(bufnr, H.ns, reply.mark, {})
  pcall(vim.api.nvim_buf_del_extmark, bufnr, H.ns, reply.mark)
  if not (owners and owners.request) or not pos[1] then
    return nil
  end
  local row = pos[1]
  local name = name_of(bufnr)
  local stop_row, stop_col = buffer.stream_end(bufnr)
  local content = ""
  if stop_row and stop_row > row then
    content = table.concat(vim.api.nvim_buf_get_text(bufnr, row + 1, 0, stop_row, stop_col, {}), "\n")
  end
  if content == "" then
    -- Nothing arrived: the chat goes back to what it was before the send, as after a cancel.
    local last = vim.api.nvim_buf_line_count(bufnr) - 1
    local from = row - reply.added
    local lines = vim.api.nvim_buf_get_lines(bufnr, from + 1, row + 1, false)
    local opening = reply.added == 2 and { "", "@Assistant:" } or { "@Assistant:" }
    if row == last and reply.added >= 1 and vim.deep_equal(lines, opening) then
      set_lines(bufnr, from + 1, row + 1, {}, opening)
    end
    notify.warn(string.format(STOPPED .. " before any of it arrived; the chat is as it was. Send again.", name))
    return nil
  end
  -- What the record holds beyond the chat, with its own ending (the same marker).
  local step = recovery.continuation(bufnr)
  if step and set_lines(bufnr, step.row, step.row + 1, step.lines) then
    local more = step.missing > 0
        and string.format(
          " (with %d bytes that had not reached the chat, from its recovery record, as :Flemma recover would)",
          step.missing
        )
      or ""
    notify.warn(
      string.format(
        STOPPED .. "; what arrived is kept%s, marked as interrupted. Send again for a new reply.",
        name,
        more
      )
    )
    return nil
  end
  if not stop_row then
    return nil
  end
  -- right_gravity = false: what is typed at the reply's end meanwhile goes after the marker.
  local stop = vim.api.nvim_buf_set_extmark(bufnr, H.ns, stop_row, stop_col, { right_gravity = false })
  return {
    cut = {
      bufnr = bufnr,
      stop = stop,
      tick = vim.api.nvim_buf_get_changedtick(bufnr),
      joinable = buffer.in_step(bufnr),
    },
    content = content,
  }
end

--- The host exited without being asked to (from flemma.host, before it unlocks the buffers):
--- every reply it was streaming is cut off where it ends now.
function M.host_exited()
  local replies = H.replies
  H.replies = {}
  local asks = {}
  for bufnr, reply in pairs(replies) do
    if vim.api.nvim_buf_is_loaded(bufnr) then
      local ok, result = pcall(cut_off, bufnr, reply)
      if not ok then
        log.write("error", string.format("marking the cut-off reply of buffer %d: %s", bufnr, result))
      elseif result then
        asks[#asks + 1] = result
      end
    end
  end
  if #asks > 0 then
    -- After the exit is handled (the restart's backoff counts this crash).
    vim.schedule(function()
      for _, item in ipairs(asks) do
        ask(item.cut, item.content)
      end
    end)
  end
end

--- A buffer was wiped.
function M.forget(bufnr)
  H.replies[bufnr] = nil
end

-- A host that crashed while a reply streamed: its end is placed now (a stop we asked for ended
-- the reply itself).
host.on_exit(function(intended)
  if not intended then
    M.host_exited()
  end
end)
locks.subscribe({ forgotten = M.forget })

return M
