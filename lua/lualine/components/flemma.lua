--- lualine component `flemma` (`sections = { lualine_x = { "flemma" } }`): the text of
--- `require("flemma.statusline").get()` in `chat` buffers, after a highlighted spinner while a
--- request or tools run, or while the host boots. Loaded by lualine only.
---
--- Options besides lualine's own: `busy_icon` (a string, or a list of frames shown in turn; the
--- default is a braille spinner) and `busy_color` (a lualine color: a highlight group name, a
--- table `{ fg, bg, gui }` or a function returning one; default: the foreground of
--- `FlemmaStatuslineBusy`, which follows `highlights.busy`).
local statusline = require("flemma.statusline")

local SPINNER = { "⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏" }

local Flemma = require("lualine.component"):extend()

--- The busy colour: `FlemmaStatuslineBusy`'s foreground over the section's own background.
local function busy_color()
  local ok, hl = pcall(vim.api.nvim_get_hl, 0, { name = "FlemmaStatuslineBusy", link = false })
  if ok and type(hl) == "table" and hl.fg then
    return { fg = string.format("#%06x", hl.fg) }
  end
  return {}
end

local function in_chat()
  return vim.bo.filetype == "chat"
end

function Flemma:init(options)
  Flemma.super.init(self, options)
  local opts = self.options
  if opts.busy_icon == nil then
    opts.busy_icon = SPINNER
  end
  if opts.busy_color == nil then
    opts.busy_color = busy_color
  end
  if opts.cond == nil then
    opts.cond = in_chat
  end
  statusline.define_highlight()
  self.busy_hl = self:create_hl(opts.busy_color, "busy")
end

--- The busy icon now: a string as is, a list of frames one per 100 ms.
function Flemma:icon()
  local icon = self.options.busy_icon
  if type(icon) == "table" then
    if #icon == 0 then
      return ""
    end
    return tostring(icon[math.floor(vim.uv.now() / 100) % #icon + 1])
  end
  return tostring(icon or "")
end

function Flemma:update_status()
  local bufnr = vim.api.nvim_get_current_buf()
  local text = statusline.get(bufnr, { escape = true })
  if text == "" then
    return ""
  end
  local busy, booting = statusline.state(bufnr)
  local icon = (busy or booting) and self:icon() or ""
  if icon == "" then
    return text
  end
  icon = icon:gsub("%%", "%%%%")
  return self:format_hl(self.busy_hl) .. icon .. self:get_default_hl() .. " " .. text
end

return Flemma
