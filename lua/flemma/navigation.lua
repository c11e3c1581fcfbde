--- flemma.navigation: go from a tool use to its result and back, and open `@./file` references,
--- from the buffer text alone (no host needed). The scan follows the chat format's rules
--- (docs/chat-format.md): role markers and tool headers count only outside code fences, tool
--- uses only in `@Assistant:` replies, tool results only in `@You:` messages. The in-process
--- language server (flemma.lsp) answers from the same functions.
local M = {}

local H = {}

-- ---------------------------------------------------------------------------------------------
-- The scan: messages, tool uses, tool results and thinking blocks of a list of lines.
-- Rows are 1-based here; the public functions below take and return 0-based rows.
-- ---------------------------------------------------------------------------------------------

-- The fence rules of the drawing scan: an opener in message text (three or more backticks, no
-- other backtick) and a closer (only backticks; the length of the run).
local fence_open = require("flemma.ui.scan").text_fence_open
local fence_close = require("flemma.ui.scan").fence_close

local function blank(line)
  return line:find("^%s*$") ~= nil
end

--- The fence that must follow a tool header at row `i`: skip blank lines, then an opener (any
--- info string) and its closer within `to`. Returns the fence's language, info, and the last row
--- of the block (the closer, or `to` when it never closes, or `i` when there is no fence).
local function block_fence(lines, i, to)
  local j = i + 1
  while j <= to and blank(lines[j]) do
    j = j + 1
  end
  if j > to then
    return nil, nil, i
  end
  local ticks, language, info = lines[j]:match("^(```+)([%w:._%-]*)(.*)$")
  if not ticks then
    return nil, nil, i
  end
  for k = j + 1, to do
    local closer = fence_close(lines[k])
    if closer and closer >= #ticks then
      return language, vim.trim(info), k
    end
  end
  return language, vim.trim(info), to
end

--- From a text fence opening at row `i`, the row after its closer (or after `to`); nil when row
--- `i` opens no fence.
local function skip_text_fence(lines, i, to)
  local ticks = fence_open(lines[i])
  if not ticks then
    return nil
  end
  for k = i + 1, to do
    local closer = fence_close(lines[k])
    if closer and closer >= ticks then
      return k + 1
    end
  end
  return to + 1
end

-- The status words and their meanings, as the drawing scan reads them.
local STATUS_WORDS = require("flemma.ui.scan").STATUS_ALIASES

--- The status in a modeline (`status=approved`, or a bare word); nil when it names none.
local function modeline_status(text)
  local explicit = text:match("status=[\"']?([%w_]+)")
  if explicit and STATUS_WORDS[explicit] then
    return STATUS_WORDS[explicit]
  end
  for word in text:gmatch("[^%s]+") do
    if STATUS_WORDS[word] then
      return STATUS_WORDS[word]
    end
  end
  if explicit then
    return "unknown"
  end
end

--- What a result block is: "done", "error", or its placeholder status.
local function result_status(suffix, language, info)
  local from_suffix
  local inner = suffix:match("^%s*%((.*)%)%s*$")
  if inner then
    from_suffix = modeline_status(inner)
  end
  if language == "flemma:tool" then
    local status = modeline_status(info or "")
    if status == nil or status == "error" or status == "unknown" then
      return "pending"
    end
    return status
  end
  if from_suffix == "error" then
    return "error"
  end
  if from_suffix and from_suffix ~= "unknown" then
    return from_suffix
  end
  return "done"
end

local THINKING_CLOSE = "^</thinking>%s*$"

--- A thinking block starting at row `i`, or nil (an unclosed one is text).
local function read_thinking(lines, i, to)
  local line = lines[i]
  local provider = line:match('^<thinking%s+([A-Za-z0-9]+):signature="[^"]*"%s*/>$')
  if provider then
    return { kind = "thinking", row = i, last = i, provider = provider }
  end
  provider = line:match('^<thinking%s+([A-Za-z0-9]+):signature="[^"]*"%s*>$')
  local redacted = line:find("^<thinking%s+redacted>$") ~= nil
  if not provider and not redacted and line ~= "<thinking>" then
    return nil
  end
  for k = i + 1, to do
    if lines[k]:find(THINKING_CLOSE) then
      return { kind = "thinking", row = i, last = k, provider = provider, redacted = redacted }
    end
  end
end

local function scan_assistant(lines, from, to, message, out)
  local i = from
  while i <= to do
    local line = lines[i]
    local first = line:byte(1)
    local nxt = i + 1
    if first == 60 then -- <
      local block = read_thinking(lines, i, to)
      if block then
        block.message = message
        out[#out + 1] = block
        nxt = block.last + 1
      end
    elseif first == 42 then -- *
      local name, id = line:match("^%*%*Tool Use:%*%*%s*`([^`]+)`%s*%(`([^)]+)`%)")
      if name then
        local _, _, last = block_fence(lines, i, to)
        out[#out + 1] = { kind = "tool_use", row = i, last = last, name = name, id = id, message = message }
        nxt = last + 1
      end
    elseif first == 96 then -- `
      nxt = skip_text_fence(lines, i, to) or i + 1
    end
    i = nxt
  end
end

local function scan_user(lines, from, to, message, out)
  local i = from
  while i <= to do
    local line = lines[i]
    local first = line:byte(1)
    local nxt = i + 1
    if first == 96 then
      nxt = skip_text_fence(lines, i, to) or i + 1
    elseif first == 42 then
      local id, suffix = line:match("^%*%*Tool Result:%*%*%s*`([^`]+)`(.*)$")
      if id then
        local language, info, last = block_fence(lines, i, to)
        out[#out + 1] = {
          kind = "tool_result",
          row = i,
          last = last,
          id = id,
          status = result_status(suffix, language, info),
          message = message,
        }
        nxt = last + 1
      end
    end
    i = nxt
  end
end

--- Scan lines (as `nvim_buf_get_lines` returns them) into messages and blocks (1-based rows).
---@param lines string[]
---@return { messages: table[], blocks: table[] }
function M.scan(lines)
  local n = #lines
  local body = 1
  if lines[1] and lines[1]:find("^```[A-Za-z0-9]+%s*$") then
    for i = 2, n do
      if lines[i]:find("^```%s*$") then
        body = i + 1
        break
      end
    end
  end
  local messages = {}
  local role, start, ticks = nil, nil, 0
  for i = body, n do
    local line = lines[i]
    local first = line:byte(1)
    if first == 96 and role then
      if ticks == 0 then
        ticks = fence_open(line) or 0
      else
        local closer = fence_close(line)
        if closer and closer >= ticks then
          ticks = 0
        end
      end
    elseif first == 64 and ticks == 0 then
      local name = line:match("^@([A-Za-z0-9]+):%s*$")
      if name then
        if role then
          messages[#messages + 1] = { role = role, row = start, last = i - 1 }
        end
        role, start = name, i
      end
    end
  end
  if role then
    messages[#messages + 1] = { role = role, row = start, last = n }
  end
  local blocks = {}
  for index, message in ipairs(messages) do
    local to = message.last
    while to > message.row and lines[to] == "" do
      to = to - 1
    end
    message.content_last = to
    if message.role == "Assistant" then
      scan_assistant(lines, message.row + 1, to, index, blocks)
    elseif message.role == "You" then
      scan_user(lines, message.row + 1, to, index, blocks)
    end
  end
  return { messages = messages, blocks = blocks }
end

-- ---------------------------------------------------------------------------------------------
-- Tool use <-> result.
-- ---------------------------------------------------------------------------------------------

--- The block (tool use, tool result, thinking) and the message around a 1-based row.
local function located(structure, row)
  local block, message
  for _, candidate in ipairs(structure.blocks) do
    if candidate.row > row then
      break
    end
    if row <= candidate.last then
      block = candidate
    end
  end
  for index, candidate in ipairs(structure.messages) do
    if candidate.row <= row and row <= candidate.last then
      message = index
    end
  end
  return block, message
end

--- The other end of a tool block: for a use, the first result with its id after it; for a
--- result, the last use with its id before it. When there is none in that direction, the
--- nearest one in the other (an out-of-order file still navigates).
local function partner(structure, block)
  local wanted = block.kind == "tool_use" and "tool_result" or "tool_use"
  local before, after
  for _, candidate in ipairs(structure.blocks) do
    if candidate.kind == wanted and candidate.id == block.id then
      if candidate.row < block.row then
        before = candidate
      elseif after == nil then
        after = candidate
      end
    end
  end
  if block.kind == "tool_use" then
    return after or before
  end
  return before or after
end

--- The tool use a result answers (for its name), if any.
local function use_of(structure, result)
  local found = partner(structure, result)
  return found and found.kind == "tool_use" and found or nil
end

-- ---------------------------------------------------------------------------------------------
-- File references and include().
-- ---------------------------------------------------------------------------------------------

local function ascii_punctuation(byte)
  return (byte >= 0x21 and byte <= 0x2f)
    or (byte >= 0x3a and byte <= 0x40)
    or (byte >= 0x5b and byte <= 0x60)
    or (byte >= 0x7b and byte <= 0x7e)
end

local function ascii_alphanumeric(byte)
  return (byte >= 0x30 and byte <= 0x39) or (byte >= 0x41 and byte <= 0x5a) or (byte >= 0x61 and byte <= 0x7a)
end

--- The length of the well-formed UTF-8 sequence starting at `bytes[at]`, or 0.
local function utf8_length(bytes, at)
  local lead = bytes[at] or -1
  if lead >= 0 and lead < 0x80 then
    return 1
  end
  local length
  local low, high = 0x80, 0xbf
  if lead >= 0xc2 and lead <= 0xdf then
    length = 2
  elseif lead >= 0xe0 and lead <= 0xef then
    length = 3
    low = lead == 0xe0 and 0xa0 or low
    high = lead == 0xed and 0x9f or high
  elseif lead >= 0xf0 and lead <= 0xf4 then
    length = 4
    low = lead == 0xf0 and 0x90 or low
    high = lead == 0xf4 and 0x8f or high
  else
    return 0
  end
  for k = 1, length - 1 do
    local byte = bytes[at + k] or -1
    if byte < low or byte > high then
      return 0
    end
    low, high = 0x80, 0xbf
  end
  return length
end

--- URL-decoding as the host reads a reference: `+` is a space, a run of `%XX` is bytes read as
--- UTF-8, and escapes that form no character (or no escape) stay as written.
local function decode(path)
  if not path:find("[%%+]") then
    return path
  end
  local out = {}
  local i, n = 1, #path
  while i <= n do
    local char = path:sub(i, i)
    if char == "+" then
      out[#out + 1] = " "
      i = i + 1
    elseif char ~= "%" then
      out[#out + 1] = char
      i = i + 1
    else
      local bytes, written = {}, {}
      while path:sub(i, i) == "%" and path:sub(i + 1, i + 2):find("^%x%x$") do
        bytes[#bytes + 1] = tonumber(path:sub(i + 1, i + 2), 16)
        written[#written + 1] = path:sub(i, i + 2)
        i = i + 3
      end
      if #bytes == 0 then
        out[#out + 1] = "%"
        i = i + 1
      else
        local at = 1
        while at <= #bytes do
          local length = utf8_length(bytes, at)
          if length == 0 then
            out[#out + 1] = written[at]
            at = at + 1
          else
            out[#out + 1] = string.char(unpack(bytes, at, at + length - 1))
            at = at + length
          end
        end
      end
    end
  end
  return table.concat(out)
end

--- The length of the whitespace character at `i` (as JavaScript's `\s` counts whitespace), or 0.
local function whitespace_length(line, i)
  local byte = line:byte(i)
  if byte == 32 or (byte >= 9 and byte <= 13) then
    return 1
  end
  if byte < 0xc2 then
    return 0
  end
  local b2, b3 = line:byte(i + 1) or 0, line:byte(i + 2) or 0
  if byte == 0xc2 then
    return b2 == 0xa0 and 2 or 0 -- U+00A0
  elseif byte == 0xe1 then
    return (b2 == 0x9a and b3 == 0x80) and 3 or 0 -- U+1680
  elseif byte == 0xe2 and b2 == 0x80 then
    -- U+2000..U+200A, U+2028, U+2029, U+202F
    return ((b3 >= 0x80 and b3 <= 0x8a) or b3 == 0xa8 or b3 == 0xa9 or b3 == 0xaf) and 3 or 0
  elseif byte == 0xe2 and b2 == 0x81 then
    return b3 == 0x9f and 3 or 0 -- U+205F
  elseif byte == 0xe3 then
    return (b2 == 0x80 and b3 == 0x80) and 3 or 0 -- U+3000
  elseif byte == 0xef then
    return (b2 == 0xbb and b3 == 0xbf) and 3 or 0 -- U+FEFF
  end
  return 0
end

--- The end (exclusive, 1-based) of the whitespace-free run starting at `at`.
local function run_end(line, at)
  local i, n = at, #line
  while i <= n and whitespace_length(line, i) == 0 do
    i = i + 1
  end
  return i
end

--- File references on one line, as the host reads them: `{ first, last (1-based, inclusive, the
--- `@` through the reference), raw (without `@`), path (decoded, `//abs` as `/abs`) }`.
function M.references_in(line)
  local found = {}
  local pos = 1
  while true do
    local at = line:find("@", pos, true)
    if not at then
      break
    end
    local prefix = line:match("^@(%.%.?/)", at) or line:match("^@(//?)", at) or line:match("^@(~/)", at)
    if not prefix or (at > 1 and ascii_alphanumeric(line:byte(at - 1))) then
      pos = at + 1
    else
      local stop = run_end(line, at + 1 + #prefix)
      local last = stop - 1
      while last > at and ascii_punctuation(line:byte(last)) do
        last = last - 1
      end
      local raw = line:sub(at + 1, last)
      local written = raw:match("^[^;]*")
      if #written <= #prefix then
        pos = at + 1
      else
        local path = decode(written)
        if written:sub(1, 2) == "//" then
          path = path:sub(2)
        end
        found[#found + 1] = { first = at, last = last, raw = raw, path = path }
        pos = stop
      end
    end
  end
  return found
end

--- `include("path")` / `include('path')` calls on one line (templates), same shape as above.
function M.includes_in(line)
  local found = {}
  local pos = 1
  while true do
    local first, last, _, path = line:find("include%s*%(%s*([\"'])(.-)%3%s*%)", pos)
    if not first then
      break
    end
    if path ~= "" then
      found[#found + 1] = { first = first, last = last, raw = path, path = path, include = true }
    end
    pos = last + 1
  end
  return found
end

--- The directory references are relative to: the chat file's, or the current directory for a
--- buffer without a name (as the host does when sending).
function M.base_dir(bufnr)
  local name = vim.api.nvim_buf_get_name(bufnr)
  if name == "" then
    return vim.fn.getcwd()
  end
  return vim.fn.fnamemodify(name, ":p:h")
end

--- The absolute path of a reference's path, relative to `base`.
function M.resolve(path, base)
  local full
  if path == "~" or path:sub(1, 2) == "~/" then
    full = (vim.uv or vim.loop).os_homedir() .. path:sub(2)
  elseif path:sub(1, 1) == "/" then
    full = path
  else
    full = base .. "/" .. path
  end
  full = vim.fn.simplify(full)
  if #full > 1 then
    full = full:gsub("/+$", "")
  end
  return full
end

--- The reference (file or include) under a 0-based column of a line, with its absolute path.
function M.reference_at(bufnr, row, col)
  local line = vim.api.nvim_buf_get_lines(bufnr, row, row + 1, false)[1]
  if not line then
    return nil
  end
  local c = col + 1
  for _, list in ipairs({ M.references_in(line), M.includes_in(line) }) do
    for _, ref in ipairs(list) do
      if ref.first <= c and c <= ref.last then
        ref.absolute = M.resolve(ref.path, M.base_dir(bufnr))
        ref.row = row
        return ref
      end
    end
  end
end

-- ---------------------------------------------------------------------------------------------
-- Definition and hover (shared by the keys and the language server).
-- ---------------------------------------------------------------------------------------------

--- The scan of a buffer, kept for the last buffer scanned until its text changes (repeated
--- `gd`, or hover then definition, scan once).
local function structure_of(bufnr)
  local tick = vim.api.nvim_buf_get_changedtick(bufnr)
  local cached = H.cache
  if cached and cached.bufnr == bufnr and cached.tick == tick then
    return cached.structure
  end
  local structure = M.scan(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false))
  H.cache = { bufnr = bufnr, tick = tick, structure = structure }
  return structure
end

local function exists(path)
  return (vim.uv or vim.loop).fs_stat(path) ~= nil
end

--- Where "go to definition" leads from a 0-based position: `{ path = … }` for a reference,
--- `{ row = … }` (0-based) for the matching tool block; otherwise nil and a short message.
---@return table|nil target, string|nil message
function M.definition(bufnr, row, col)
  local ref = M.reference_at(bufnr, row, col)
  if ref then
    if not exists(ref.absolute) then
      return nil, string.format("%s: no such file: %s", ref.include and ref.raw or ("@" .. ref.raw), ref.absolute)
    end
    return { path = ref.absolute, reference = ref }
  end
  local structure = structure_of(bufnr)
  local block = located(structure, row + 1)
  if block == nil or block.kind == "thinking" then
    return nil, "Nothing to go to here (put the cursor on a tool use, a tool result or an @./file reference)"
  end
  local other = partner(structure, block)
  if other == nil then
    if block.kind == "tool_use" then
      return nil, string.format("No result for tool use %s (%s) yet", block.id, block.name)
    end
    return nil, string.format("No tool use with id %s in this chat", block.id)
  end
  return { row = other.row - 1, block = other }
end

local STATUS_TEXT = {
  done = "finished",
  error = "finished with an error",
  pending = "waiting for approval (pending)",
  approved = "approved, not run yet",
  denied = "denied",
  rejected = "rejected",
  aborted = "aborted",
}

--- Markdown describing what is under a 0-based position, or nil when there is nothing.
---@return string|nil
function M.hover(bufnr, row, col)
  local ref = M.reference_at(bufnr, row, col)
  if ref then
    local stat = (vim.uv or vim.loop).fs_stat(ref.absolute)
    local what
    if stat == nil then
      what = "no such file"
    elseif stat.type == "directory" then
      what = "a directory"
    else
      what = string.format("%d bytes", stat.size)
    end
    local label = ref.include and string.format('include("%s")', ref.raw) or ("@" .. ref.raw)
    return string.format("**%s**\n\n`%s` (%s)", label, ref.absolute, what)
  end
  local structure = structure_of(bufnr)
  local block, index = located(structure, row + 1)
  local message = index and structure.messages[index]
  local where = message
      and string.format(
        "@%s: message %d of %d, lines %d–%d",
        message.role,
        index,
        #structure.messages,
        message.row,
        message.content_last
      )
    or nil
  local parts = {}
  if block and block.kind == "tool_use" then
    local result = partner(structure, block)
    parts[#parts + 1] = string.format("**Tool use** `%s` (`%s`)", block.name, block.id)
    if result and result.kind == "tool_result" then
      parts[#parts + 1] =
        string.format("Result on line %d: %s", result.row, STATUS_TEXT[result.status] or result.status)
    else
      parts[#parts + 1] = "No result yet"
    end
  elseif block and block.kind == "tool_result" then
    local use = use_of(structure, block)
    parts[#parts + 1] = string.format(
      "**Tool result** for `%s` (`%s`): %s",
      use and use.name or "?",
      block.id,
      STATUS_TEXT[block.status] or block.status
    )
    parts[#parts + 1] = use and string.format("Tool use on line %d", use.row)
      or "No tool use with this id in the chat (the result is not sent)"
  elseif block and block.kind == "thinking" then
    local kind = block.redacted and "redacted" or block.provider and ("signed by " .. block.provider) or "unsigned"
    parts[#parts + 1] = string.format("**Thinking** (%s), lines %d–%d", kind, block.row, block.last)
  elseif message == nil then
    return nil
  end
  if where then
    parts[#parts + 1] = where
  end
  return table.concat(parts, "\n\n")
end

-- ---------------------------------------------------------------------------------------------
-- The keys.
-- ---------------------------------------------------------------------------------------------

--- Move the cursor to a 0-based row (column 0), keeping the jump in the jumplist and opening
--- folds there.
local function jump_to(row)
  vim.cmd("normal! m'")
  vim.api.nvim_win_set_cursor(0, { row + 1, 0 })
  vim.cmd("normal! zv")
end

--- Open a file in the current window (`:edit`), reporting a failure briefly.
function M.open(path)
  local ok, err = pcall(vim.cmd.edit, vim.fn.fnameescape(path))
  if not ok then
    require("flemma.notify").warn(tostring(err):gsub("^Vim%(%a+%):", ""))
    return false
  end
  return true
end

--- `gd` in a chat buffer: the matching tool result or use, or the referenced file.
function M.goto_definition()
  local bufnr = vim.api.nvim_get_current_buf()
  local cursor = vim.api.nvim_win_get_cursor(0)
  local target, message = M.definition(bufnr, cursor[1] - 1, cursor[2])
  if target == nil then
    require("flemma.notify").info(message)
    return false
  end
  if target.path then
    return M.open(target.path)
  end
  jump_to(target.row)
  return true
end

--- `gf` in a chat buffer: the `@./file` reference (or `include()`) under the cursor, resolved
--- like the host does; Neovim's own `gf` anywhere else. For an `expr` mapping.
function M.goto_file_expr()
  local cursor = vim.api.nvim_win_get_cursor(0)
  local ref = M.reference_at(vim.api.nvim_get_current_buf(), cursor[1] - 1, cursor[2])
  if ref == nil then
    return "gf"
  end
  return "<Cmd>lua require('flemma.navigation').goto_file()<CR>"
end

--- Open the reference under the cursor (reports when there is none or the file is missing).
function M.goto_file()
  local bufnr = vim.api.nvim_get_current_buf()
  local cursor = vim.api.nvim_win_get_cursor(0)
  local ref = M.reference_at(bufnr, cursor[1] - 1, cursor[2])
  if ref == nil then
    require("flemma.notify").info("No file reference under the cursor")
    return false
  end
  if not exists(ref.absolute) then
    local label = ref.include and ref.raw or ("@" .. ref.raw)
    require("flemma.notify").warn(string.format("%s: no such file: %s", label, ref.absolute))
    return false
  end
  return M.open(ref.absolute)
end

return M
