--- flemma.tools.ui: what a running tool looks like in the buffer (an animated indicator at the
--- end of its `**Tool Result:**` line, driven by a Lua timer), cursor moves after a result, and
--- the preview lines of empty placeholders.
local scan = require("flemma.ui.scan")
local lazy = require("flemma.util.lazy")
local turn = lazy.require("flemma.chat.turn")
local tools = lazy.require("flemma.tools")
local ui = lazy.require("flemma.ui")
local preview = lazy.require("flemma.tools.preview")
local M = {}

local FRAMES = { "⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏" }
local INTERVAL_MS = 200
local DONE_VISIBLE_MS = 1500

local H = {
  ns = vim.api.nvim_create_namespace("flemma.tool_status"),
  entries = {}, ---@type table<string, { bufnr: integer, mark: integer, state: string, started: integer, job_id: integer|nil }>
  timer = nil,
  frame = 1,
}

--- The indicator's colours, linked so that colourschemes can restyle them.
local function define_highlights()
  vim.api.nvim_set_hl(0, "FlemmaToolRunning", { link = "DiagnosticInfo", default = true })
  vim.api.nvim_set_hl(0, "FlemmaToolSuccess", { link = "DiagnosticOk", default = true })
  vim.api.nvim_set_hl(0, "FlemmaToolError", { link = "DiagnosticError", default = true })
  -- What a running tool printed, under its block (flemma.tools.output).
  vim.api.nvim_set_hl(0, "FlemmaToolOutput", { link = "Comment", default = true })
end
define_highlights()
vim.api.nvim_create_autocmd("ColorScheme", {
  group = vim.api.nvim_create_augroup("flemma.tool_status", { clear = true }),
  callback = define_highlights,
})

local function key(bufnr, tool_id)
  return bufnr .. ":" .. tool_id
end

local function elapsed(entry)
  local seconds = math.floor((vim.uv.now() - entry.started) / 1000)
  if seconds < 60 then
    return seconds .. "s"
  end
  return string.format("%dm%02ds", math.floor(seconds / 60), seconds % 60)
end

local function text_for(entry)
  local frame = FRAMES[H.frame]
  if entry.state == "running" then
    return { { " " .. frame .. " Executing… " .. elapsed(entry), "FlemmaToolRunning" } }
  elseif entry.state == "background" then
    return {
      {
        string.format(
          " %s Running in the background (job %d) · %s — :Flemma tool:cancel stops it",
          frame,
          entry.job_id or 0,
          elapsed(entry)
        ),
        "FlemmaToolRunning",
      },
    }
  elseif entry.state == "success" then
    return { { " ✓ Complete", "FlemmaToolSuccess" } }
  elseif entry.state == "error" then
    return { { " ✗ Failed", "FlemmaToolError" } }
  end
  return nil
end

local function draw(k, entry)
  if not vim.api.nvim_buf_is_valid(entry.bufnr) then
    H.entries[k] = nil
    return
  end
  local pos = vim.api.nvim_buf_get_extmark_by_id(entry.bufnr, H.ns, entry.mark, {})
  if not pos[1] then
    H.entries[k] = nil
    return
  end
  local chunks = text_for(entry)
  pcall(vim.api.nvim_buf_set_extmark, entry.bufnr, H.ns, pos[1], 0, {
    id = entry.mark,
    virt_text = chunks,
    virt_text_pos = "eol",
    hl_mode = "combine",
  })
end

local function animating()
  for _, entry in pairs(H.entries) do
    if entry.state == "running" or entry.state == "background" then
      return true
    end
  end
  return false
end

local function tick()
  H.frame = H.frame % #FRAMES + 1
  for k, entry in pairs(H.entries) do
    if entry.state == "running" or entry.state == "background" then
      draw(k, entry)
    end
  end
  if not animating() and H.timer then
    H.timer:stop()
    H.timer:close()
    H.timer = nil
  end
end

local function ensure_timer()
  if H.timer then
    return
  end
  H.timer = vim.uv.new_timer()
  H.timer:start(INTERVAL_MS, INTERVAL_MS, vim.schedule_wrap(tick))
end

local function clear(k)
  local entry = H.entries[k]
  H.entries[k] = nil
  if entry and vim.api.nvim_buf_is_valid(entry.bufnr) then
    pcall(vim.api.nvim_buf_del_extmark, entry.bufnr, H.ns, entry.mark)
  end
end

--- Host → Lua: `{ bufnr, tool_id, row?, state = running|background|success|error|clear, job_id? }`.
function M.spinner(params)
  local bufnr, tool_id = params.bufnr, params.tool_id
  if not vim.api.nvim_buf_is_valid(bufnr) then
    return
  end
  local k = key(bufnr, tool_id)
  local state = params.state
  if state == "clear" then
    clear(k)
    return
  end
  local entry = H.entries[k]
  if state == "running" then
    clear(k)
    local row = math.min(params.row or 0, vim.api.nvim_buf_line_count(bufnr) - 1)
    -- The host's row comes from its latest parse; results written since above the block may
    -- have moved it. The header is found again then.
    row = M.header_row(bufnr, tool_id) or row
    local mark = vim.api.nvim_buf_set_extmark(bufnr, H.ns, row, 0, {})
    entry = { bufnr = bufnr, mark = mark, state = "running", started = vim.uv.now() }
    H.entries[k] = entry
    draw(k, entry)
    ensure_timer()
    return
  end
  if not entry then
    return
  end
  entry.state = state
  entry.job_id = params.job_id ~= vim.NIL and params.job_id or entry.job_id
  if state == "success" or state == "error" then
    -- The result replaced the block: find its header again.
    local row = M.header_row(bufnr, tool_id)
    if row then
      pcall(vim.api.nvim_buf_del_extmark, bufnr, H.ns, entry.mark)
      entry.mark = vim.api.nvim_buf_set_extmark(bufnr, H.ns, row, 0, {})
    end
    draw(k, entry)
    vim.defer_fn(function()
      if H.entries[k] == entry then
        clear(k)
      end
    end, DONE_VISIBLE_MS)
  else
    draw(k, entry)
    ensure_timer()
  end
end

--- 0-based row of the `**Tool Result:**` header of `tool_id`, if present.
function M.header_row(bufnr, tool_id)
  local block = scan.tool_block(ui.read(bufnr), "tool_result", tool_id)
  return block and block.row or nil
end

--- Where `tools.cursor_after_result` puts the cursor after the result of `tool_id` (0-based):
--- its header (`result`), or the line after the message that holds it (`next`); nil when the
--- result is not in the buffer.
local function result_row(bufnr, tool_id, mode)
  local structure = ui.read(bufnr)
  local block = scan.tool_block(structure, "tool_result", tool_id)
  if not block then
    return nil
  end
  if mode ~= "next" then
    return block.row
  end
  local message = structure.messages[scan.message_at(structure, block.row) or 0]
  return message and message.end_row + 1 or nil
end

--- Host → Lua: move the cursor of the window showing the buffer (the current one first) to
--- `row`, or to the result of `tool_id` as `mode` says (it comes right after the result's write).
function M.cursor(params)
  local bufnr = params.bufnr
  if not vim.api.nvim_buf_is_valid(bufnr) then
    return
  end
  local win = vim.api.nvim_get_current_win()
  if vim.api.nvim_win_get_buf(win) ~= bufnr then
    win = vim.fn.bufwinid(bufnr)
  end
  if win == -1 then
    return
  end
  local target = params.row
  if params.tool_id then
    target = result_row(bufnr, params.tool_id, params.mode)
  end
  if target == nil then
    return
  end
  local row = math.max(0, math.min(target, vim.api.nvim_buf_line_count(bufnr) - 1))
  pcall(vim.api.nvim_win_set_cursor, win, { row + 1, 0 })
  -- The end of the turn moves a cursor that is still here (flemma.chat, "where the turn ends").
  turn.placed(bufnr, row)
end

--- Host → Lua: the empty placeholders of a buffer and what their preview says.
function M.previews(params)
  local bufnr = params.bufnr
  if not vim.api.nvim_buf_is_valid(bufnr) then
    return
  end
  local items = {}
  for _, item in ipairs(params.items or {}) do
    local body = item.body
    if item.lua then
      local input = item.input
      if input == vim.NIL or type(input) ~= "table" then
        input = {}
      end
      local width = preview.width(bufnr)
      body = tools.format_preview(item.name, input, math.max(10, width - #item.name - 2)) or body
    end
    if type(body) == "string" then
      items[#items + 1] = { row = item.row, name = item.name, body = body }
    end
  end
  preview.render(bufnr, items)
end

return M
