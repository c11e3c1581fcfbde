--- flemma.ui.scan: the shape of a chat buffer for drawing it — frontmatter, messages, and the
--- blocks inside them (thinking, tool uses, tool results, code fences) — read line by line in Lua.
---
--- The host's parser (src/core/chat/parser.ts) stays the authority on what a chat means; this
--- scan only decides what the buffer looks like, so that highlighting, folds and the message
--- motions (`]m`, `[m`, `im`, `am` in flemma.chat) never wait for the host (it may be starting,
--- or busy). It is the only reading of the grammar on the Lua side: `gd`, `gf` and the language
--- server ask the host (flemma.navigation). It follows the parser's rules for everything it
--- reports, and test/nvim/ui-scan.test.ts checks that both agree on a corpus of chats and on
--- thousands of random edits of it.
---
--- Rows are 0-based and `end_row` is inclusive. A structure is
---   { line_count, frontmatter = block|nil, messages = { {role, row, end_row, last_row}… },
---     blocks = { {kind, row, end_row, msg, …}… } }
--- where `messages[i].last_row` is its last non-blank row and blocks are sorted by row. Block
--- kinds: `thinking` (`redacted`, `self_closing`), `tool_use` (`name`, `id`), `tool_result`
--- (`id`, `status`, `error`), `code` (a fence in message text; `lang`), `aborted` (one line),
--- `slash` (a slash command line of a `@You:` message; `name`, `args`, `name_end`),
--- `permission` (an agent's permission placeholder in an `@Assistant:` message; `id`, `status`
--- as a tool result's, `aborted` for a cancelled one; `always`).
--- A tool block whose fence is not closed has `open = true` (it is still being written).
local M = {}

--- The status words of a tool result header suffix or placeholder fence, and what each means.
local STATUS_ALIASES = {
  pending = "pending",
  approved = "approved",
  approve = "approved",
  denied = "denied",
  deny = "denied",
  rejected = "rejected",
  reject = "rejected",
  aborted = "aborted",
  error = "error",
}

local BACKTICK, AT, STAR, LT, SLASH = 96, 64, 42, 60, 47

--- A slash command line (docs/slash-commands.md; src/core/chat/slash.ts reads the same):
--- `/name` or `/space:name` (a letter, then letters, digits, `_`, `-`), then the line's end or a
--- space or tab before the arguments. Answers the name, the arguments (trimmed) and the byte
--- column where the name ends; nil for any other line.
---@param line string
---@return string|nil name
---@return string|nil args
---@return integer|nil name_end
function M.slash_command(line)
  local name, rest = line:match("^/(%a[%w_%-]*)(.*)$")
  if not name then
    return nil
  end
  local sub, after = rest:match("^:(%a[%w_%-]*)(.*)$")
  if sub then
    name, rest = name .. ":" .. sub, after
  end
  if rest ~= "" and not rest:match("^[ \t]") then
    return nil
  end
  return name, vim.trim(rest), #name + 1
end

--- The role a line marks when it is a message marker alone on its line (`@You:` → "You"), or nil.
---@param line string
---@return string|nil
function M.role_marker(line)
  return line:match("^@(%w+):%s*$")
end

--- The width of the title that opens a tool block's header (`**Tool Use:**`, `**Tool Result:**`).
M.TITLE_WIDTH = { tool_use = #"**Tool Use:**", tool_result = #"**Tool Result:**" }

--- Whether a line (trimmed) only delimits a block: a code fence or a thinking tag.
---@param text string
function M.is_delimiter(text)
  return text:sub(1, 3) == "```" or text:match("^</?thinking") ~= nil
end

--- `^(`{3,})[^`]*$`: the tick count of a fence opener in message text.
local function text_fence_open(line)
  local ticks, rest = line:match("^(```+)(.*)$")
  if ticks and not rest:find("`", 1, true) then
    return #ticks
  end
  return nil
end

--- `^(`+)\s*$`: the tick count of a closing fence line.
local function fence_close(line)
  local ticks = line:match("^(`+)%s*$")
  return ticks and #ticks or nil
end

--- The words and `key=value` pairs of a header suffix or a fence info string: the status.
local function modeline_status(text)
  local status, explicit
  for token in text:gmatch("%S+") do
    local key, value = token:match("^([%w_]+)=(.*)$")
    if key then
      if key == "status" then
        explicit = value:gsub("^[\"'](.*)[\"']$", "%1")
      end
    else
      local word = token:gsub("^[\"'](.*)[\"']$", "%1")
      if status == nil and STATUS_ALIASES[word] then
        status = STATUS_ALIASES[word]
      end
    end
  end
  if explicit ~= nil then
    return STATUS_ALIASES[explicit], true
  end
  return status, false
end

--- The block fence after a tool header at row `i` (blank lines skipped), within rows ≤ `to`.
--- Returns open_row, close_row (nil when unclosed), lang, info; or nil when there is none.
local function block_fence(lines, offset, i, to)
  local j = i + 1
  while j <= to and not lines[j - offset]:find("%S") do
    j = j + 1
  end
  if j > to then
    return nil
  end
  local ticks, lang, info = lines[j - offset]:match("^(```+)([%w:._%-]*)(.*)$")
  if not ticks then
    return nil
  end
  for k = j + 1, to do
    local close = fence_close(lines[k - offset])
    if close and close >= #ticks then
      return j, k, lang, info
    end
  end
  return j, nil, lang, info
end

--- A text fence opened at row `i`: the row of its closer, or nil when it never closes (≤ `to`).
local function skip_text_fence(lines, offset, i, to, ticks)
  for k = i + 1, to do
    local close = fence_close(lines[k - offset])
    if close and close >= ticks then
      return k
    end
  end
  return nil
end

local function thinking_open(line)
  if line == "<thinking>" then
    return "plain"
  elseif line:match("^<thinking%s+redacted>$") then
    return "redacted"
  elseif line:match('^<thinking%s+%w+:signature="[^"]*"%s*/>$') then
    return "self_closing"
  elseif line:match('^<thinking%s+%w+:signature="[^"]*"%s*>$') then
    return "signed"
  end
  return nil
end

--- How a thinking block's opening line is shown where room is short (a fold): `<thinking>`
--- without its provider's signature, `<thinking redacted>`; nil for a line that opens none.
---@param line string
---@return string|nil label
---@return boolean|nil redacted  the block's content is opaque (no preview of it)
function M.thinking_label(line)
  local form = thinking_open(line)
  if form == "plain" or form == "signed" then
    return "<thinking>", false
  elseif form == "redacted" then
    return "<thinking redacted>", true
  end
  return nil
end

--- An agent's permission placeholder at row `i` of an `@Assistant:` message: the header
--- `**Agent Permission:** `id` what` and its `flemma:tool` fence; nil for any other line.
local function agent_permission(lines, offset, i, to, msg)
  local id = lines[i - offset]:match("^%*%*Agent Permission:%*%*%s*`([^`]+)`")
  if not id then
    return nil
  end
  local open_row, close_row, lang, info = block_fence(lines, offset, i, to)
  if not open_row or lang ~= "flemma:tool" then
    return nil
  end
  local status = info:match("status=[\"']?([%w_]+)")
  return {
    kind = "permission",
    row = i,
    end_row = close_row or to,
    msg = msg,
    id = id,
    -- The statuses of a tool placeholder's fence, and `cancelled` (an aborted request).
    status = status == "cancelled" and "aborted" or STATUS_ALIASES[status or ""] or "pending",
    always = info:match("scope=always") ~= nil or nil,
    open = close_row == nil or nil,
  }
end

--- The blocks of one message (rows `from`..`to`), appended to `out`.
local function message_blocks(lines, offset, role, from, to, msg, out)
  local i = from
  while i <= to do
    local line = lines[i - offset]
    local first = line:byte(1)
    local next_row = i + 1
    if first == BACKTICK then
      local ticks = text_fence_open(line)
      if ticks then
        local close = skip_text_fence(lines, offset, i, to, ticks)
        out[#out + 1] = {
          kind = "code",
          row = i,
          end_row = close or to,
          msg = msg,
          lang = line:match("^`+%s*([^%s`]*)"),
          open = close == nil or nil,
        }
        next_row = (close or to) + 1
      end
    elseif first == SLASH and role == "You" then
      local name, args, name_end = M.slash_command(line)
      if name then
        out[#out + 1] =
          { kind = "slash", row = i, end_row = i, msg = msg, name = name, args = args, name_end = name_end }
      end
    elseif first == LT and role == "Assistant" then
      local form = thinking_open(line)
      if form == "self_closing" then
        out[#out + 1] = { kind = "thinking", row = i, end_row = i, msg = msg, self_closing = true }
      elseif form then
        for k = i + 1, to do
          if lines[k - offset]:match("^</thinking>%s*$") then
            out[#out + 1] = { kind = "thinking", row = i, end_row = k, msg = msg, redacted = form == "redacted" or nil }
            next_row = k + 1
            break
          end
        end
      elseif line:match("^<!%-%-%s*flemma:aborted:.*%-%->$") then
        out[#out + 1] = { kind = "aborted", row = i, end_row = i, msg = msg }
      end
    elseif first == STAR then
      local permission = role == "Assistant" and agent_permission(lines, offset, i, to, msg)
      if permission then
        out[#out + 1] = permission
        next_row = permission.end_row + 1
      elseif role == "Assistant" then
        local name, id = line:match("^%*%*Tool Use:%*%*%s*`([^`]+)`%s*%(`([^)]+)`%)")
        if name then
          local open_row, close_row = block_fence(lines, offset, i, to)
          if open_row then
            out[#out + 1] = {
              kind = "tool_use",
              row = i,
              end_row = close_row or to,
              msg = msg,
              name = name,
              id = id,
              open = close_row == nil or nil,
            }
            next_row = (close_row or to) + 1
          end
        end
      elseif role == "You" then
        local id, rest = line:match("^%*%*Tool Result:%*%*%s*`([^`]+)`(.*)$")
        if id then
          local open_row, close_row, lang, info = block_fence(lines, offset, i, to)
          if open_row then
            local suffix = rest:match("^%s*%((.*)%)%s*$")
            local status, is_error = nil, false
            if suffix then
              status = modeline_status(suffix)
              is_error = status == "error"
            end
            if lang == "flemma:tool" then
              local fence_status = modeline_status(info)
              status = (fence_status and fence_status ~= "error") and fence_status or "pending"
            elseif status == "error" then
              status = nil
            end
            out[#out + 1] = {
              kind = "tool_result",
              row = i,
              end_row = close_row or to,
              msg = msg,
              id = id,
              status = status,
              error = is_error or nil,
              open = close_row == nil or nil,
            }
            next_row = (close_row or to) + 1
          end
        end
      end
    end
    i = next_row
  end
end

--- The frontmatter block of `lines` (1-based list holding the whole buffer from row 0), if any.
local function frontmatter(lines)
  local first = lines[1]
  if not first or not first:match("^```%w+%s*$") then
    return nil
  end
  for i = 2, #lines do
    if lines[i]:match("^```%s*$") then
      return { kind = "frontmatter", row = 0, end_row = i - 1, lang = first:match("^```(%w+)") }
    end
  end
  return nil
end

--- Scan `lines` (a 1-based list holding buffer rows `base`, `base + 1`, … to the end of the
--- buffer) for messages, appended to `messages` and `blocks`. `base` must be a row outside any
--- fence: 0, the row after the frontmatter, or a message marker row.
local function scan_body(lines, base, messages, blocks)
  -- Row r is lines[r - offset]; the block helpers take the same (lines, offset) pair.
  local offset = base - 1
  local last = base + #lines - 1
  local role, start
  local ticks = 0
  local function close(end_row)
    if role then
      local last_row = end_row
      while last_row > start and lines[last_row - offset] == "" do
        last_row = last_row - 1
      end
      local msg = #messages + 1
      messages[msg] = { role = role, row = start, end_row = end_row, last_row = last_row }
      message_blocks(lines, offset, role, start + 1, last_row, msg, blocks)
    end
  end
  for row = base, last do
    local line = lines[row - offset]
    local first = line:byte(1)
    if first == BACKTICK and role then
      if ticks == 0 then
        ticks = text_fence_open(line) or 0
      else
        local close_ticks = fence_close(line)
        if close_ticks and close_ticks >= ticks then
          ticks = 0
        end
      end
    elseif first == AT and ticks == 0 then
      local name = M.role_marker(line)
      if name then
        close(row - 1)
        role, start = name, row
      end
    end
  end
  close(last)
end

--- Scan a whole buffer given as a 1-based list of its lines.
---@param lines string[]
function M.scan(lines)
  local structure = { line_count = #lines, messages = {}, blocks = {} }
  local fm = frontmatter(lines)
  structure.frontmatter = fm
  local base = fm and fm.end_row + 1 or 0
  local body = base == 0 and lines or vim.list_slice(lines, base + 1)
  scan_body(body, base, structure.messages, structure.blocks)
  return structure
end

--- Scan again after a change from 0-based row `first` on: everything before the message that
--- holds `first` is kept; `get_lines(from)` returns the buffer's rows `from`..end (1-based list).
---@param previous table the structure before the change
---@param first integer
---@param line_count integer the buffer's line count now
---@param get_lines fun(from: integer): string[]
---@param first_line string the buffer's first line now
function M.rescan(previous, first, line_count, get_lines, first_line)
  local fm = previous.frontmatter
  local keep = 0
  -- As the parser: an edit in or next to the frontmatter, or a first line that could open one
  -- that was not closed before, means reading everything again.
  if not (fm and first <= fm.end_row + 1) and not (fm == nil and first_line:match("^```%w+%s*$")) then
    for i = #previous.messages, 1, -1 do
      if previous.messages[i].row < first then
        keep = i
        break
      end
    end
  end
  if keep == 0 then
    return M.scan(get_lines(0))
  end
  local restart = previous.messages[keep].row
  local structure = { line_count = line_count, frontmatter = fm, messages = {}, blocks = {} }
  for i = 1, keep - 1 do
    structure.messages[i] = previous.messages[i]
  end
  for _, block in ipairs(previous.blocks) do
    if block.msg >= keep then
      break
    end
    structure.blocks[#structure.blocks + 1] = block
  end
  scan_body(get_lines(restart), restart, structure.messages, structure.blocks)
  return structure
end

local STRUCTURE_PREFIXES = { "**Tool Use:**", "**Tool Result:**", "**Agent Permission:**", "<thinking", "</thinking" }

--- Whether a line of message text carries the format's escape (src/core/chat/escape.ts): one or
--- more backslashes before a line that would otherwise be structure. The request sends it
--- without its first backslash; the display conceals that backslash.
---@param line string
function M.escaped(line)
  if line:byte(1) ~= 92 then
    return false
  end
  local rest = line:match("^\\+(.*)$")
  if M.role_marker(rest) or rest:match("^<!%-%-%s*flemma:") or rest:sub(1, 3) == "```" then
    return true
  end
  for _, prefix in ipairs(STRUCTURE_PREFIXES) do
    if rest:sub(1, #prefix) == prefix then
      return true
    end
  end
  return false
end

--- The slash command being typed in `before` (a line up to the cursor), for completion:
--- `"name", prefix` while its name is typed (`/`, `/thi`, `/flemma:`), `"args", name, rest`
--- once a space follows the name; nil when the line is no slash command.
---@param before string
---@return string|nil what
---@return string|nil name
---@return string|nil rest
function M.slash_typed(before)
  if before == "/" then
    return "name", ""
  end
  local colon = before:sub(-1) == ":"
  local name, _, name_end = M.slash_command(colon and before:sub(1, -2) or before)
  if not name or (colon and (name:find(":", 1, true) or name_end ~= #before - 1)) then
    return nil
  end
  if colon then
    return "name", name .. ":"
  elseif name_end == #before then
    return "name", name
  end
  return "args", name, before:sub(name_end + 2)
end

--- The first block of `kind` (`tool_use` or `tool_result`) of the call `id`, or nil.
---@param structure table
---@param kind string
---@param id string
function M.tool_block(structure, kind, id)
  for _, block in ipairs(structure.blocks) do
    if block.kind == kind and block.id == id then
      return block
    end
  end
  return nil
end

--- The index of the last item of a row-sorted list whose `row` is at most `row`, or nil.
local function last_at_or_before(list, row)
  local lo, hi, found = 1, #list, nil
  while lo <= hi do
    local mid = math.floor((lo + hi) / 2)
    if list[mid].row <= row then
      found, lo = mid, mid + 1
    else
      hi = mid - 1
    end
  end
  return found
end

--- The index of the message holding `row` (0-based), or nil (before the first marker).
function M.message_at(structure, row)
  return last_at_or_before(structure.messages, row)
end

--- The innermost block holding `row`, or nil.
function M.block_at(structure, row)
  local found = last_at_or_before(structure.blocks, row)
  local block = found and structure.blocks[found]
  if block and block.end_row >= row then
    return block, found
  end
  local fm = structure.frontmatter
  if fm and row <= fm.end_row then
    return fm, nil
  end
  return nil
end

return M
