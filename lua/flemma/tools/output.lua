--- flemma.tools.output: what a running tool printed so far, as virtual lines under its block
--- (docs/tools.md, "Watching a command run"). The host sends the last lines at most once a frame
--- (`tools.output`), already cleaned of escapes and control characters; they are drawn as
--- `virt_lines`, never part of the text, and go when the call ends, is cancelled or the host goes.
local scan = require("flemma.ui.scan")
-- Defines the highlights of a running tool, `FlemmaToolOutput` among them.
require("flemma.tools.ui")
local lazy = require("flemma.util.lazy")
local host = lazy.require("flemma.host")
local ui = lazy.require("flemma.ui")
local M = {}

local H = {
  ns = vim.api.nvim_create_namespace("flemma.tool_output"),
  marks = {}, ---@type table<integer, table<string, integer>> bufnr → tool id → extmark id
  --- Lines waiting for their call's placeholder to be in the buffer, by `bufnr:tool_id`.
  waiting = {}, ---@type table<string, string[]>
}

-- A placeholder the call still needs (`<M-CR>` on a bare tool use) is written while it runs:
-- lines that came first wait for it, looked for again every 20 ms for at most a second.
local RETRY_MS = 20
local RETRIES = 50

local function clear(bufnr, tool_id)
  H.waiting[bufnr .. ":" .. tool_id] = nil
  local marks = H.marks[bufnr]
  local mark = marks and marks[tool_id]
  if not mark then
    return
  end
  marks[tool_id] = nil
  if next(marks) == nil then
    H.marks[bufnr] = nil
  end
  pcall(vim.api.nvim_buf_del_extmark, bufnr, H.ns, mark)
end

--- The last row of the call's `**Tool Result:**` block (its placeholder while it runs).
local function block_end(bufnr, tool_id)
  local block = scan.tool_block(ui.read(bufnr), "tool_result", tool_id)
  return block and (block.end_row or block.row) or nil
end

local function draw(bufnr, tool_id, lines, tries)
  local key = bufnr .. ":" .. tool_id
  if not vim.api.nvim_buf_is_valid(bufnr) then
    H.waiting[key] = nil
    return
  end
  local row = block_end(bufnr, tool_id)
  if not row then
    H.waiting[key] = lines
    tries = (tries or 0) + 1
    if tries <= RETRIES then
      vim.defer_fn(function()
        -- Newer lines (or the end of the call) replace these.
        if H.waiting[key] == lines then
          draw(bufnr, tool_id, lines, tries)
        end
      end, RETRY_MS)
    end
    return
  end
  H.waiting[key] = nil
  local virt = {}
  for i, line in ipairs(lines) do
    virt[i] = { { "  │ " .. line, "FlemmaToolOutput" } }
  end
  H.marks[bufnr] = H.marks[bufnr] or {}
  local ok, mark = pcall(vim.api.nvim_buf_set_extmark, bufnr, H.ns, row, 0, {
    id = H.marks[bufnr][tool_id],
    virt_lines = virt,
  })
  if ok then
    H.marks[bufnr][tool_id] = mark
  end
end

--- Host → Lua: `{ bufnr, outputs = { { tool_id, lines }, … } }`; no lines: the view goes.
function M.show(params)
  local bufnr = params.bufnr
  if not vim.api.nvim_buf_is_valid(bufnr) then
    H.marks[bufnr] = nil
    return
  end
  for _, item in ipairs(params.outputs or {}) do
    if type(item.lines) == "table" and #item.lines > 0 then
      draw(bufnr, item.tool_id, item.lines)
    else
      clear(bufnr, item.tool_id)
    end
  end
end

-- The calls went with the host: nothing they printed stays on screen.
host.on_exit(function()
  for bufnr in pairs(H.marks) do
    if vim.api.nvim_buf_is_valid(bufnr) then
      vim.api.nvim_buf_clear_namespace(bufnr, H.ns, 0, -1)
    end
  end
  H.marks = {}
  H.waiting = {}
end)

return M
