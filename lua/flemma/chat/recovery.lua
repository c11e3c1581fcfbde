--- flemma.recovery: a reply that never reached its chat file, put back (docs/context.md,
--- "Recovery after a crash"). While a reply streams, the host keeps a record of it in
--- `stdpath("state")/flemma/recovery/` (src/host/recovery.ts); opening the chat offers it with a
--- message, `:Flemma recover` inserts it and `:Flemma recover discard` deletes it. Nothing here
--- waits: the record is read in the background when a chat is read, and the offer is a message,
--- never a prompt (a headless Neovim or a `-c` script must not hang on it).
local notify = require("flemma.notify")
local lazy = require("flemma.util.lazy")
local buffer = lazy.require("flemma.chat.buffer")
local commands = lazy.require("flemma.commands")

local M = {}

local VERSION = 1

local H = {
  --- Buffers whose record was offered and not taken yet: their writes keep the record.
  offered = {}, ---@type table<integer, true>
}

--- The directory of the records, beside Neovim's swap files.
function M.dir()
  return vim.fs.joinpath(vim.fn.stdpath("state"), "flemma", "recovery")
end

--- The record file of a chat's full path (the name the host gives it: src/core/chat/recovery.ts).
---@param path string
function M.record_file(path)
  local base = path:match("([^/]*)$") or "chat"
  local safe = base:sub(1, 64):gsub("[^A-Za-z0-9._-]", "_")
  return vim.fs.joinpath(M.dir(), string.format("%s-%s.json", safe, vim.fn.sha256(path):sub(1, 16)))
end

--- The buffer's full path, as the host is told it (`tools.facts`), or nil without a file.
local function path_of(bufnr)
  local name = vim.api.nvim_buf_get_name(bufnr)
  if name == "" or vim.bo[bufnr].buftype ~= "" then
    return nil
  end
  return vim.fn.fnamemodify(name, ":p")
end

local function is_chat(bufnr)
  return vim.bo[bufnr].filetype == "chat" or vim.api.nvim_buf_get_name(bufnr):match("%.chat$") ~= nil
end

--- A record's text decoded and checked, or nil and why.
local function decode(text, path)
  local ok, record = pcall(vim.json.decode, text)
  if not ok or type(record) ~= "table" then
    return nil, "the record is not valid JSON"
  end
  if record.version ~= VERSION then
    return nil, "the record was written by another version of Flemma"
  end
  local base = record.base
  if
    type(base) ~= "table"
    or type(base.rows) ~= "number"
    or type(base.sha256) ~= "string"
    or type(record.before) ~= "string"
    or type(record.reply) ~= "string"
    or type(record.ending) ~= "string"
  then
    return nil, "the record is incomplete"
  end
  if record.path ~= path then
    return nil, "the record belongs to " .. tostring(record.path)
  end
  return record
end

--- What putting the record back does to the buffer as it is now:
--- `{ kind = "present" }` (the chat already holds all of it), or
--- `{ kind = "continue" | "changed", row, lines }`: replace the last row (`row`, 0-based) with
--- `lines`. "continue": the chat still reads as the reply left it, and the rest goes on from
--- there (a part written by `editing.auto_write` is not repeated); "changed": the chat changed
--- since, and the reply goes at its end, under an `@Assistant:` of its own.
local function plan(bufnr, record)
  local lines = vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)
  local count = #lines
  local last = lines[count] or ""
  local full = record.before .. record.reply .. record.ending
  local rows = record.base.rows
  if rows >= 1 and rows <= count then
    local base = table.concat(lines, "\n", 1, rows)
    if vim.fn.sha256(base) == record.base.sha256 then
      local rest = rows < count and ("\n" .. table.concat(lines, "\n", rows + 1, count)) or ""
      if full:sub(1, #rest) == rest then
        local missing = full:sub(#rest + 1)
        if missing == "" then
          return { kind = "present" }
        end
        return {
          kind = "continue",
          row = count - 1,
          lines = vim.split(last .. missing, "\n", { plain = true }),
          added = #missing,
        }
      end
    end
  end
  local opening = last:match("%S") and "\n\n@Assistant:" or "\n@Assistant:"
  local text = last .. opening .. record.reply .. record.ending
  return { kind = "changed", row = count - 1, lines = vim.split(text, "\n", { plain = true }) }
end

--- Reads a file in the background; `done(text)` on the main loop (nil when there is none).
local function read_async(file, done)
  vim.uv.fs_open(file, "r", 438, function(err, fd)
    if err or not fd then
      return
    end
    vim.uv.fs_fstat(fd, function(stat_err, stat)
      if stat_err or not stat then
        vim.uv.fs_close(fd)
        return
      end
      vim.uv.fs_read(fd, stat.size, 0, function(read_err, data)
        vim.uv.fs_close(fd)
        if not read_err and data then
          vim.schedule(function()
            done(data)
          end)
        end
      end)
    end)
  end)
end

local function read_sync(file)
  local handle = io.open(file, "rb")
  if not handle then
    return nil
  end
  local text = handle:read("*a")
  handle:close()
  return text
end

local function size_of(text)
  local bytes = #text
  if bytes < 1024 then
    return string.format("%d bytes", bytes)
  end
  return string.format("%.1f KB", bytes / 1024)
end

local function offer_key(bufnr)
  return "recover:" .. bufnr
end

--- A chat was read from disk: when it has a record, the offer (in the background).
function M.check(bufnr)
  local path = path_of(bufnr)
  if not path or not is_chat(bufnr) then
    return
  end
  local file = M.record_file(path)
  read_async(file, function(text)
    if not vim.api.nvim_buf_is_loaded(bufnr) or path_of(bufnr) ~= path then
      return
    end
    local record = decode(text, path)
    if not record then
      return
    end
    local step = plan(bufnr, record)
    if step.kind == "present" then
      -- The file holds the whole reply (written just before the record went): nothing to offer.
      vim.uv.fs_unlink(file)
      return
    end
    H.offered[bufnr] = true
    local what = record.complete and "a reply that was never saved" or "a reply cut off while it streamed"
    notify.warn(
      string.format(
        "%s has %s (%s). :Flemma recover inserts it, :Flemma recover discard deletes it.",
        vim.fn.fnamemodify(path, ":t"),
        what,
        size_of(record.reply)
      ),
      { key = offer_key(bufnr) }
    )
  end)
end

--- `:Flemma recover [discard]` in the current buffer.
---@param action string|nil
function M.recover(action)
  local bufnr = vim.api.nvim_get_current_buf()
  local path = path_of(bufnr)
  if not path then
    notify.warn("recover: this buffer has no file, so nothing of it is kept")
    return
  end
  if action ~= nil and action ~= "discard" then
    notify.error(string.format("recover: unknown argument '%s' (expected nothing or 'discard')", action))
    return
  end
  local file = M.record_file(path)
  local text = read_sync(file)
  if not text then
    notify.info("recover: nothing to recover for " .. vim.fn.fnamemodify(path, ":t"))
    return
  end
  notify.retract(offer_key(bufnr))
  if action == "discard" then
    H.offered[bufnr] = nil
    os.remove(file)
    notify.info("recover: the recovered reply was discarded")
    return
  end
  local record, why = decode(text, path)
  if not record then
    notify.error(string.format("recover: %s cannot be used (%s); it is left in place", file, why))
    return
  end
  if buffer.is_locked(bufnr) then
    notify.warn("recover: a reply or a tool is writing to this chat; try again once it is done")
    return
  end
  local step = plan(bufnr, record)
  H.offered[bufnr] = nil
  if step.kind == "present" then
    os.remove(file)
    notify.info("recover: the chat already holds this reply")
    return
  end
  local modifiable = vim.bo[bufnr].modifiable
  vim.bo[bufnr].modifiable = true
  -- One change, so one undo step.
  vim.api.nvim_buf_set_lines(bufnr, step.row, step.row + 1, false, step.lines)
  vim.bo[bufnr].modifiable = modifiable
  local last = vim.api.nvim_buf_line_count(bufnr)
  for _, win in ipairs(vim.fn.win_findbuf(bufnr)) do
    pcall(vim.api.nvim_win_set_cursor, win, { last, 0 })
  end
  -- The record goes once the file holds the reply: at the next write of the buffer.
  if step.kind == "changed" then
    notify.warn(
      "recover: the chat changed since the reply started; the reply is inserted at its end, check what it follows"
    )
  else
    notify.info("recover: the reply is back in the chat (write it to keep it)")
  end
end

--- A reply in `bufnr` was cut off in this Neovim (its host stopped; flemma.cutoff): when the
--- chat's record continues the chat as it is now, what putting it back does —
--- `{ row, lines, missing }`: replace the last row (`row`, 0-based) with `lines`, which add the
--- `missing` bytes of the reply the chat did not show yet and the record's ending (the interrupted
--- marker and the next `@You:`). Nil when there is no such record (none, another reply's, or one
--- behind the chat).
---@param bufnr integer
function M.continuation(bufnr)
  local path = path_of(bufnr)
  if not path or not is_chat(bufnr) then
    return nil
  end
  local text = read_sync(M.record_file(path))
  local record = text and decode(text, path)
  if not record or record.complete or record.ending == "" then
    return nil
  end
  local step = plan(bufnr, record)
  if step.kind ~= "continue" or step.added < #record.ending then
    return nil
  end
  return { row = step.row, lines = step.lines, missing = step.added - #record.ending }
end

--- A chat was written: its record goes, unless a reply is still streaming into it (the record
--- is what a crash would leave) or its record was offered and not taken.
local function written(bufnr)
  if not is_chat(bufnr) or H.offered[bufnr] then
    return
  end
  local owners = buffer.lock_owners(bufnr)
  if owners and owners.request then
    return
  end
  local path = path_of(bufnr)
  if path then
    vim.uv.fs_unlink(M.record_file(path), function() end)
  end
end

--- The autocmds and the command (once, from `bootstrap()`).
function M.bootstrap()
  local group = vim.api.nvim_create_augroup("flemma.recovery", { clear = true })
  vim.api.nvim_create_autocmd("BufReadPost", {
    group = group,
    pattern = "*.chat",
    desc = "Flemma: offer a reply kept from a crash",
    callback = function(ev)
      M.check(ev.buf)
    end,
  })
  vim.api.nvim_create_autocmd("BufWritePost", {
    group = group,
    desc = "Flemma: a chat written holds its reply; its recovery record goes",
    callback = function(ev)
      written(ev.buf)
    end,
  })
  vim.api.nvim_create_autocmd("BufWipeout", {
    group = group,
    callback = function(ev)
      H.offered[ev.buf] = nil
    end,
  })
  commands.register("recover", {
    desc = "Insert the reply kept from a crash or a :q! (`discard` deletes it)",
    starts_host = false,
    complete = function()
      return { "discard" }
    end,
    run = function(args)
      M.recover(args[1])
    end,
  })
end

return M
