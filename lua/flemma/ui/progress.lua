--- flemma.progress: the indicator of a running request, drawn at the end of its `@Assistant:`
--- line (for `:Flemma compact`, the chat's last line). The host sends state changes; the
--- spinner and the elapsed time tick in a Lua timer, so animation costs no RPC.
local M = {}

local FRAMES = { "⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏" }

local H = {
  ns = vim.api.nvim_create_namespace("flemma.progress"),
  active = {}, ---@type table<integer, { mark: integer, timer: uv.uv_timer_t, started: integer, frame: integer, label: string }>
}

local function elapsed(entry)
  return string.format("%ds", math.floor((vim.uv.hrtime() - entry.started) / 1e9))
end

local function draw(bufnr)
  local entry = H.active[bufnr]
  if not entry or not vim.api.nvim_buf_is_valid(bufnr) then
    return
  end
  local pos = vim.api.nvim_buf_get_extmark_by_id(bufnr, H.ns, entry.mark, {})
  if not pos[1] then
    return
  end
  pcall(vim.api.nvim_buf_set_extmark, bufnr, H.ns, pos[1], 0, {
    id = entry.mark,
    virt_text = {
      { " " .. FRAMES[entry.frame] .. " ", "FlemmaProgress" },
      { entry.label .. " · " .. elapsed(entry), "FlemmaProgressLabel" },
    },
    virt_text_pos = "eol",
  })
end

--- Start the indicator on 0-based `row` (the `@Assistant:` line).
function M.start(params)
  local bufnr, row = params.bufnr, params.row
  M.stop({ bufnr = bufnr })
  if not vim.api.nvim_buf_is_valid(bufnr) then
    return false
  end
  vim.api.nvim_set_hl(0, "FlemmaProgress", { link = "DiagnosticInfo", default = true })
  vim.api.nvim_set_hl(0, "FlemmaProgressLabel", { link = "Comment", default = true })
  local entry = {
    mark = vim.api.nvim_buf_set_extmark(bufnr, H.ns, row, 0, {}),
    timer = vim.uv.new_timer(),
    started = vim.uv.hrtime(),
    frame = 1,
    label = "Waiting…",
  }
  H.active[bufnr] = entry
  entry.timer:start(0, 100, function()
    entry.frame = entry.frame % #FRAMES + 1
    vim.schedule(function()
      draw(bufnr)
    end)
  end)
  return true
end

--- Change the label: `{bufnr, phase, characters?, tool?, attempt?}`.
function M.update(params)
  local entry = H.active[params.bufnr]
  if not entry then
    return false
  end
  local label
  if params.phase == "thinking" then
    label = string.format("Thinking… %d characters", params.characters or 0)
  elseif params.phase == "streaming" then
    label = string.format("%d characters", params.characters or 0)
  elseif params.phase == "tool_input" then
    label = string.format("%s: %d characters", params.tool or "tool", params.characters or 0)
  elseif params.phase == "compacting" then
    label = string.format("Compacting… %d characters", params.characters or 0)
  elseif params.phase == "retrying" then
    label = string.format("Retrying (attempt %d)…", params.attempt or 2)
  else
    label = "Waiting…"
  end
  entry.label = label
  draw(params.bufnr)
  return true
end

--- Remove the indicator.
function M.stop(params)
  local entry = H.active[params.bufnr]
  if not entry then
    return false
  end
  H.active[params.bufnr] = nil
  pcall(function()
    entry.timer:stop()
    entry.timer:close()
  end)
  if vim.api.nvim_buf_is_valid(params.bufnr) then
    vim.api.nvim_buf_clear_namespace(params.bufnr, H.ns, 0, -1)
  end
  return true
end

--- Remove every indicator (the host exited).
function M.stop_all()
  for bufnr in pairs(H.active) do
    M.stop({ bufnr = bufnr })
  end
end

return M
