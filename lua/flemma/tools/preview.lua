--- flemma.tools.preview: the virtual line under each empty tool placeholder, `name: summary`.
--- The host computes the summary (the body) after each parse; this module fits the line to the
--- window and draws it with the `FlemmaToolPreview` highlight.
local M = {}

---@class flemma.tools.preview.Item
---@field row integer 0-based line the virtual line goes under
---@field name string the tool's name
---@field tool_id? string
---@field body string the summary after `name: `

local HL = "FlemmaToolPreview"
local INDENT = "  "
--- Cells left free at the right edge of the window.
local MARGIN = 1
local ELLIPSIS = "…"
local DEFAULT_EOL = "↵"

M.ns = vim.api.nvim_create_namespace("flemma_tool_preview")

local H = {
  value = nil, ---@type any the configured `highlights.tool_preview`
  applied = nil, ---@type table|nil the group as we last defined it
}

--- The window to measure: the current one when it shows the buffer, else any that does.
---@param bufnr integer
---@return integer|nil
local function window_of(bufnr)
  local win = vim.api.nvim_get_current_win()
  if vim.api.nvim_win_get_buf(win) == bufnr then
    return win
  end
  win = vim.fn.bufwinid(bufnr)
  return win ~= -1 and win or nil
end

--- Cells available for text in `win` (sign, number and fold columns excluded).
---@param win integer|nil
---@return integer
local function text_width(win)
  if not win then
    return vim.o.columns
  end
  local info = vim.fn.getwininfo(win)[1]
  return vim.api.nvim_win_get_width(win) - (info and info.textoff or 0)
end

--- Cells a preview line of `bufnr` may use (what `format_preview` gets, before the name).
---@param bufnr integer
---@return integer
function M.width(bufnr)
  -- Two cells of indent and one kept free, as `render` does.
  return math.max(1, text_width(window_of(bufnr)) - 3)
end

--- The `eol` character of 'listchars' (the window's value when there is a window).
---@param win integer|nil
---@return string
local function eol_char(win)
  local listchars = win and vim.wo[win].listchars or vim.o.listchars
  for item in vim.gsplit(listchars, ",", { plain = true }) do
    local value = item:match("^eol:(.+)$")
    if value then
      return value
    end
  end
  return DEFAULT_EOL
end

--- `text` cut to `width` display cells, ending in `…` when cut.
---@param text string
---@param width integer
---@return string
function M.fit(text, width)
  if vim.api.nvim_strwidth(text) <= width then
    return text
  end
  if width < 1 then
    return ""
  end
  local out, used = {}, 0
  -- One UTF-8 character at a time (a lead byte and its continuation bytes).
  for ch in text:gmatch("[%z\1-\127\192-\255][\128-\191]*") do
    local cells = vim.api.nvim_strwidth(ch)
    if used + cells > width - 1 then
      break
    end
    out[#out + 1] = ch
    used = used + cells
  end
  return table.concat(out) .. ELLIPSIS
end

--- The text of one preview line for a window of `width` cells.
---@param name string
---@param body string
---@param width integer
---@param eol string
---@return string
function M.line(name, body, width, eol)
  local text = body == "" and name or (name .. ": " .. body)
  text = text:gsub("\r?\n", function()
    return eol
  end)
  text = text:gsub("[%z\r\t]", " ")
  return INDENT .. M.fit(text, width - MARGIN - #INDENT)
end

--- Remove every preview line of a buffer.
---@param bufnr integer
function M.clear(bufnr)
  if vim.api.nvim_buf_is_valid(bufnr) then
    vim.api.nvim_buf_clear_namespace(bufnr, M.ns, 0, -1)
  end
end

--- Draw the preview lines of a buffer, replacing the previous ones; `{}` clears them.
---@param bufnr integer
---@param items flemma.tools.preview.Item[]
function M.render(bufnr, items)
  if type(bufnr) ~= "number" or not vim.api.nvim_buf_is_valid(bufnr) then
    return
  end
  M.clear(bufnr)
  if type(items) ~= "table" or #items == 0 then
    return
  end
  local win = window_of(bufnr)
  local width, eol = text_width(win), eol_char(win)
  local last = vim.api.nvim_buf_line_count(bufnr) - 1
  for _, item in ipairs(items) do
    local row = item.row
    if type(row) == "number" and row >= 0 and row <= last and type(item.name) == "string" then
      local body = type(item.body) == "string" and item.body or ""
      pcall(vim.api.nvim_buf_set_extmark, bufnr, M.ns, row, 0, {
        virt_lines = { { { M.line(item.name, body, width, eol), HL } } },
        -- The fence line rewritten in place (`:Flemma tool:approve` changes its status) keeps the
        -- mark on it; with the default right gravity it would slide to the closing fence.
        right_gravity = false,
      })
    end
  end
end

--- The `nvim_set_hl` attributes for a `highlights.tool_preview` value: a group name (or a
--- `Group+attr:…` expression, whose group is used), a `#rrggbb` colour, an attribute table, or
--- `{ dark = …, light = … }`.
---@param value any
---@return table
local function hl_spec(value)
  if type(value) == "string" then
    if value:match("^#%x%x%x%x%x%x$") then
      return { fg = value }
    end
    local group = value:match("^%s*([%w_.@]+)")
    return group and { link = group } or { link = "Comment" }
  elseif type(value) == "table" then
    if value.dark ~= nil or value.light ~= nil then
      return hl_spec(value[vim.o.background] or value.dark or value.light)
    end
    local attrs = vim.deepcopy(value)
    attrs.default, attrs.force = nil, nil
    return attrs
  end
  return { link = "Comment" }
end

local function apply()
  -- A default definition does not replace an existing one, so our own earlier definition (from a
  -- previous setup) is replaced explicitly; anybody else's is left alone.
  local current = vim.api.nvim_get_hl(0, { name = HL, link = true })
  local extra = { default = true, force = H.applied ~= nil and vim.deep_equal(current, H.applied) or nil }
  -- The pair `{ dark, light }` is resolved now: a colorscheme may have changed 'background'.
  local ok = pcall(vim.api.nvim_set_hl, 0, HL, vim.tbl_extend("force", hl_spec(H.value), extra))
  if not ok then
    -- Attributes Neovim does not accept: fall back to the default look.
    vim.api.nvim_set_hl(0, HL, vim.tbl_extend("force", { link = "Comment" }, extra))
  end
  -- Remember the group only when our definition is the one in force.
  local now = vim.api.nvim_get_hl(0, { name = HL, link = true })
  H.applied = now.default and now or nil
end

--- Define `FlemmaToolPreview` from `highlights.tool_preview` (default: linked to `Comment`), as a
--- default definition that a colorscheme or the user may override, and define it again after
--- every `:colorscheme`.
---@param highlights table|nil the `highlights` section of the configuration
function M.setup_highlights(highlights)
  H.value = type(highlights) == "table" and highlights.tool_preview or nil
  apply()
  local group = vim.api.nvim_create_augroup("flemma_tool_preview", { clear = true })
  vim.api.nvim_create_autocmd("ColorScheme", { group = group, callback = apply })
end

return M
