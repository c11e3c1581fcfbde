--- flemma.chat.add: `:'<,'>Flemma new`, `:'<,'>Flemma add`, `:Flemma add %` (docs/chats.md,
--- "Starting chats"): lines of a file, as a fenced block under a line naming the file and the
--- line range, or the whole file as an `@./` reference, put into a new chat or the last used one.
--- They go under the message at that chat's cursor when it is a `@You:`, else into a new `@You:`
--- at the end. Nothing the chat holds is lost: its buffer is changed (one undo step), never read
--- again from disk, and a chat Flemma is writing into (a reply streams, tools run, its file
--- runs) is refused, changing nothing.
local lazy = require("flemma.util.lazy")
local buffer = lazy.require("flemma.chat.buffer")
local config = lazy.require("flemma.config")
local files = lazy.require("flemma.chat.files")
local guard = lazy.require("flemma.chat.guard")
local notify = lazy.require("flemma.notify")
local start = lazy.require("flemma.chat.start")
local ui = lazy.require("flemma.ui")
local scan = lazy.require("flemma.ui.scan")
local M = {}

--- `file` (absolute) as the user reads it: relative to the working directory, else to `~`.
local function display(file)
  return vim.fn.fnamemodify(file, ":~:.")
end

--- The longest run of backticks that starts a line of `lines`.
local function longest_ticks(lines)
  local longest = 0
  for _, line in ipairs(lines) do
    local ticks = line:match("^%s*(`+)")
    longest = math.max(longest, ticks and #ticks or 0)
  end
  return longest
end

--- `line` as message text that is sent as written: each `{{` and `{%` (a template's opening) and
--- each `@` that starts a file reference (`@./`, `@../`, `@/`, `@~/`, `@mcp:`) becomes a template
--- expression giving those characters. Selected code is the user's or a repository's text, never
--- code to run or a file to read.
function M.literal(line)
  line = line:gsub("{([{%%])", function(second)
    return '{{ "{' .. second .. '" }}'
  end)
  line = line:gsub("@(%.?%.?/)", '{{ "@" }}%1'):gsub("@~/", '{{ "@" }}~/')
  return (line:gsub("@mcp:", '{{ "@" }}mcp:'))
end

--- Lines `line1`..`line2` of `src` as a block: "From `src/x.ts` lines 10–24:" and a fence with the
--- buffer's filetype, longer than any fence the lines hold (so none of them ends it).
function M.fenced(src, line1, line2)
  local lines = vim.api.nvim_buf_get_lines(src, line1 - 1, line2, false)
  local range = line1 == line2 and string.format("line %d", line1) or string.format("lines %d–%d", line1, line2)
  local name = vim.api.nvim_buf_get_name(src)
  local header = name == "" and string.format("From an unnamed buffer, %s:", range)
    or string.format("From `%s` %s:", display(name), range)
  local fence = string.rep("`", math.max(3, longest_ticks(lines) + 1))
  local block = { header, fence .. (vim.bo[src].filetype or "") }
  for _, line in ipairs(lines) do
    block[#block + 1] = M.literal(line)
  end
  block[#block + 1] = fence
  return block
end

--- `rest` percent-encoded where a file reference could not hold it as written (whitespace, `%`,
--- `+`, `;`, `#`, `?`, and a trailing punctuation character, which would end the reference).
local function encode(rest)
  local function hex(ch)
    return string.format("%%%02X", ch:byte())
  end
  rest = rest:gsub("[%s#%%%?;%+]", hex)
  return (rest:gsub("(%p)$", hex))
end

--- The file reference for `file` (absolute) in a chat in `dir`, by the rule of the `read` tool's
--- references (src/core/tools/definitions/read.ts): `@./x` below the chat's directory, `@~/x`
--- below the home directory, `@/x` elsewhere. Only `@./` is read in a chat that is not trusted;
--- a chat made by `:Flemma new` is yours, and trusted (docs/security.md).
function M.reference(file, dir)
  local home = vim.uv.os_homedir() or ""
  local below = function(root)
    return root ~= "" and root ~= "/" and vim.startswith(file, root .. "/") and file:sub(#root + 2) or nil
  end
  local rel = below(dir)
  if rel then
    return "@./" .. encode(rel)
  end
  rel = below(home)
  if rel then
    return "@~/" .. encode(rel)
  end
  return "@" .. encode(file)
end

--- Why Flemma may not write into `buf` now, or nil.
function M.busy(buf)
  local owners = buffer.lock_owners(buf)
  local name = vim.fn.fnamemodify(vim.api.nvim_buf_get_name(buf), ":t")
  if owners and (owners.request or owners.tools) then
    return string.format("%s is %s", name, guard.message(buf))
  end
  if files.running(buf) then
    return string.format("%s is read-only while its file runs (:Flemma run)", name)
  end
  if not vim.bo[buf].modifiable then
    return string.format("%s is not 'modifiable'", name)
  end
  return nil
end

--- The window showing `buf`: in this tab page first; nil when none does.
local function window_of(buf)
  local wins = vim.fn.win_findbuf(buf)
  for _, win in ipairs(wins) do
    if vim.api.nvim_win_get_tabpage(win) == vim.api.nvim_get_current_tabpage() then
      return win
    end
  end
  return wins[1]
end

--- Put `block` into `buf` under the `@You:` message at `row` (0-based), else into a new `@You:`
--- at the end, an empty line after it unless one follows; returns the 1-based row after the
--- block, where the cursor goes.
function M.place(buf, block, row)
  local st = ui.read(buf)
  local count = vim.api.nvim_buf_line_count(buf)
  local index = scan.message_at(st, row)
  local message = index and st.messages[index]
  local lines, at, stop = {}, count, count
  if message and message.role == "You" then
    at, stop = message.last_row + 1, message.last_row + 1
    lines[1] = message.last_row > message.row and "" or nil
  else
    local tail = vim.api.nvim_buf_get_lines(buf, count - 1, count, false)[1]
    if count == 1 and tail == "" then
      at, stop = 0, 1
    elseif tail ~= "" then
      lines[1] = ""
    end
    lines[#lines + 1] = "@You:"
  end
  local after = at == stop and at < count and vim.api.nvim_buf_get_lines(buf, at, at + 1, false)[1] or nil
  vim.list_extend(lines, block)
  local cursor = at + #lines + 1
  if after == nil or after:find("%S") then
    lines[#lines + 1] = ""
  end
  vim.api.nvim_buf_set_lines(buf, at, stop, false, lines)
  return cursor
end

--- Put `block` into the chat `buf` and show it (where it is shown, else per
--- `ui.new_chat.layout`), the cursor after the block. Refused, changing nothing, while busy
--- (`what`: the command, for the message); returns whether it was put.
function M.into(buf, block, what)
  local why = M.busy(buf)
  if why then
    notify.warn(string.format("%s: %s; nothing was added", what, why))
    return false
  end
  local win = window_of(buf)
  local row = win and vim.api.nvim_win_get_cursor(win)[1] or vim.api.nvim_buf_get_mark(buf, '"')[1]
  if win then
    vim.api.nvim_set_current_win(win)
  else
    start.show(buf, config.get().ui.new_chat.layout)
  end
  vim.api.nvim_win_set_cursor(0, { M.place(buf, block, math.max(row, 1) - 1), 0 })
  start.focused(buf)
  return true
end

--- What the command puts into the chat, from the current buffer: a function of the chat's
--- directory, or nil when it puts nothing (no range, no `%`).
local function content(args, ctx)
  local src = vim.api.nvim_get_current_buf()
  if vim.tbl_contains(args, "%") then
    local name = vim.api.nvim_buf_get_name(src)
    if name == "" or vim.bo[src].buftype ~= "" then
      error("%: this buffer has no file", 0)
    end
    local file = vim.fn.fnamemodify(name, ":p")
    return function(dir)
      return { M.reference(file, dir) }
    end
  end
  if ctx and (ctx.range or 0) > 0 then
    local block = M.fenced(src, ctx.line1, ctx.line2)
    return function()
      return block
    end
  end
  return nil
end

--- The directory the chat's references are read from: its file's, or the working directory for
--- a buffer without a name (as the host reads them, src/host/trust-check.ts).
local function dir_of(buf)
  local name = vim.api.nvim_buf_get_name(buf)
  return name == "" and vim.fn.getcwd() or vim.fn.fnamemodify(name, ":p:h")
end

--- `:Flemma new [name]`, `:'<,'>Flemma new [name]`, `:Flemma new %`.
function M.new(args, ctx)
  local make = content(args, ctx)
  local name = table.concat(
    vim.tbl_filter(function(arg)
      return arg ~= "%"
    end, args),
    " "
  )
  local buf = start.new(name)
  if make then
    M.into(buf, make(dir_of(buf)), "new")
  end
end

--- `:'<,'>Flemma add`, `:Flemma add %`: into the last used chat (a new one when there is none).
function M.add(args, ctx)
  local make = content(args, ctx)
  if make == nil then
    error("select lines first (:'<,'>Flemma add), or add the current file (:Flemma add %)", 0)
  end
  local buf = start.last()
  if buf == vim.api.nvim_get_current_buf() then
    error("this is the chat itself; run it from the file you are reading", 0)
  end
  buf = buf or start.new()
  M.into(buf, make(dir_of(buf)), "add")
end

return M
