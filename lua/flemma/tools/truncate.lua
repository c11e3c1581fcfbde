--- flemma.tools.truncate: output truncation for Lua tools (`ctx.truncate`), a port of the host's
--- src/core/tools/truncate.ts that gives the same answers without a round trip to the host.
---
--- Limits are lines AND UTF-8 bytes; text exactly at a limit is kept whole. Lines are split on
--- "\n", and one trailing "\n" ends the last line (it neither adds a line nor counts toward the
--- byte limit, but is part of `total_bytes`). Kept content is whole lines joined by "\n". When not
--- even one line fits, the edge line is cut on a character boundary and marked. The result fields
--- are the TypeScript ones in snake_case (`truncatedBy` → `truncated_by`); TypeScript's `null` is
--- `nil` here.
local M = {}

M.MAX_LINES = 2000
M.MAX_BYTES = 50 * 1024

--- Appended to the kept start of a single line too big for the byte limit (head).
M.HEAD_CUT_MARKER = " ... [truncated]"
--- Prepended to the kept end of a single line too big for the byte limit (tail).
M.TAIL_CUT_MARKER = "[truncated] ... "

---@class flemma.tools.truncate.Opts
---@field max_lines? number default `MAX_LINES`
---@field max_bytes? number default `MAX_BYTES`

---@class flemma.tools.truncate.CutLine
---@field line integer 1-based number of the cut line
---@field line_bytes integer size of the whole original line
---@field kept_bytes integer bytes of the line that were kept (marker excluded)

---@class flemma.tools.truncate.Result
---@field content string
---@field truncated boolean
---@field truncated_by "lines"|"bytes"|nil which limit cut the text; nil when not truncated
---@field total_lines integer
---@field total_bytes integer
---@field shown_lines integer lines in `content` (a cut line counts as one)
---@field shown_bytes integer size of `content`
---@field cut_line flemma.tools.truncate.CutLine|nil set when a single over-long line was cut
---@field output_lines integer the same as `shown_lines` (the name the seed's examples use)
---@field output_bytes integer the same as `shown_bytes`

local UNITS = { "B", "KB", "MB", "GB" }

--- `value` with one decimal, ties rounded up as JavaScript's `toFixed(1)` does for positive
--- numbers (C's printf would round 1.25 to "1.2"; JavaScript gives "1.3").
---@param value number >= 0
---@return string
local function to_fixed1(value)
  local quarters = value * 4
  if quarters == math.floor(quarters) and quarters % 2 == 1 then
    -- x.25 or x.75: an exact tie at the second decimal.
    local tenths = math.floor(value * 10 + 0.5)
    return string.format("%d.%d", math.floor(tenths / 10), tenths % 10)
  end
  return string.format("%.1f", value)
end

--- Human-readable, 1024-based size: `512B`, `12.1KB`, `2.0MB`, `1.0GB`.
---@param bytes number
---@return string
function M.format_size(bytes)
  local n = 0
  if type(bytes) == "number" and bytes == bytes and bytes > 0 and bytes < math.huge then
    n = bytes
  end
  if n < 1024 then
    local whole = math.floor(n)
    if n - whole >= 0.5 then
      whole = whole + 1
    end
    return string.format("%dB", whole)
  end
  local value, unit = n / 1024, 2
  while unit < #UNITS and tonumber(to_fixed1(value)) >= 1024 do
    value = value / 1024
    unit = unit + 1
  end
  return to_fixed1(value) .. UNITS[unit]
end

---@param value number|nil
---@param fallback integer
---@return number
local function clean_limit(value, fallback)
  if type(value) ~= "number" or value ~= value then
    return fallback
  end
  return math.max(0, math.floor(value))
end

--- Lines of `text`: split on "\n", one trailing "\n" ending the last line.
---@param text string
---@return string[]
local function split_lines(text)
  local lines = {}
  if text == "" then
    return lines
  end
  local stop = #text
  if text:sub(-1) == "\n" then
    stop = stop - 1
  end
  local start = 1
  while true do
    local nl = text:find("\n", start, true)
    if not nl or nl > stop then
      lines[#lines + 1] = text:sub(start, stop)
      return lines
    end
    lines[#lines + 1] = text:sub(start, nl - 1)
    start = nl + 1
  end
end

--- Whether the byte at 1-based `index` continues a UTF-8 sequence (10xxxxxx).
local function is_continuation(s, index)
  local b = s:byte(index)
  return b ~= nil and b >= 0x80 and b < 0xC0
end

--- The longest start of `line` within `budget` bytes, ending on a character boundary.
local function cut_start(line, budget)
  if #line <= budget then
    return line
  end
  local stop = math.max(0, budget)
  while stop > 0 and is_continuation(line, stop + 1) do
    stop = stop - 1
  end
  return line:sub(1, stop)
end

--- The longest end of `line` within `budget` bytes, starting on a character boundary.
local function cut_end(line, budget)
  if #line <= budget then
    return line
  end
  local start = #line - math.max(0, budget) + 1
  while start <= #line and is_continuation(line, start) do
    start = start + 1
  end
  return line:sub(start)
end

---@param fields table
---@return flemma.tools.truncate.Result
local function result(fields)
  fields.output_lines = fields.shown_lines
  fields.output_bytes = fields.shown_bytes
  return fields
end

---@param text string
---@param opts flemma.tools.truncate.Opts|nil
---@param from_end boolean
---@return flemma.tools.truncate.Result
local function truncate(text, opts, from_end)
  text = type(text) == "string" and text or tostring(text or "")
  opts = opts or {}
  local max_lines = clean_limit(opts.max_lines, M.MAX_LINES)
  local max_bytes = clean_limit(opts.max_bytes, M.MAX_BYTES)
  local total_bytes = #text
  local body_bytes = text:sub(-1) == "\n" and total_bytes - 1 or total_bytes

  -- Under both limits: count the lines without building them.
  if body_bytes <= max_bytes then
    local count = 0
    if text ~= "" then
      local _, newlines = text:gsub("\n", "")
      count = newlines + (text:sub(-1) == "\n" and 0 or 1)
    end
    if count <= max_lines then
      return result({
        content = text,
        truncated = false,
        total_lines = count,
        total_bytes = total_bytes,
        shown_lines = count,
        shown_bytes = total_bytes,
      })
    end
  end

  local lines = split_lines(text)
  local total_lines = #lines

  -- Take whole lines from the chosen end while both limits allow.
  local kept, used = {}, 0
  for i = 1, total_lines do
    if #kept >= max_lines then
      break
    end
    local line = lines[from_end and (total_lines - i + 1) or i]
    local cost = #line + (#kept > 0 and 1 or 0)
    if used + cost > max_bytes then
      break
    end
    used = used + cost
    kept[#kept + 1] = line
  end
  if from_end then
    local n = #kept
    for i = 1, math.floor(n / 2) do
      kept[i], kept[n - i + 1] = kept[n - i + 1], kept[i]
    end
  end
  local truncated_by = #kept >= max_lines and "lines" or "bytes"

  local content = table.concat(kept, "\n")
  local cut_line = nil
  if #kept == 0 and max_lines > 0 and total_lines > 0 then
    -- Not even one whole line fits: cut the edge line on a character boundary, with a marker.
    local line_no = from_end and total_lines or 1
    local line = lines[line_no]
    local marker = from_end and M.TAIL_CUT_MARKER or M.HEAD_CUT_MARKER
    local with_marker = max_bytes > #marker
    local budget = with_marker and (max_bytes - #marker) or max_bytes
    local piece = from_end and cut_end(line, budget) or cut_start(line, budget)
    if with_marker then
      content = from_end and (marker .. piece) or (piece .. marker)
    else
      content = piece
    end
    cut_line = { line = line_no, line_bytes = #line, kept_bytes = #piece }
  end

  return result({
    content = content,
    truncated = true,
    truncated_by = truncated_by,
    total_lines = total_lines,
    total_bytes = total_bytes,
    shown_lines = cut_line and 1 or #kept,
    shown_bytes = #content,
    cut_line = cut_line,
  })
end

--- Keep the first lines (file reads, listings, search results).
---@param text string
---@param opts? flemma.tools.truncate.Opts
---@return flemma.tools.truncate.Result
function M.truncate_head(text, opts)
  return truncate(text, opts, false)
end

--- Keep the last lines (command output, where the end matters).
---@param text string
---@param opts? flemma.tools.truncate.Opts
---@return flemma.tools.truncate.Result
function M.truncate_tail(text, opts)
  return truncate(text, opts, true)
end

return M
