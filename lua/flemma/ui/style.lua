--- flemma.ui.style: turn a `highlights.*` value into `nvim_set_hl` attributes.
---
--- A value is one of:
---   "Group"                    link to that group
---   "#rrggbb"                  that foreground colour
---   "bold" / "bold,italic"     those attributes (the names `nvim_set_hl` accepts)
---   "Group+bg:#101010-fg:#333333"
---                              the group's colours with each channel of `bg` raised and of `fg`
---                              lowered by those amounts (clamped to 0…255); `^fg:0.3` moves
---                              `fg` 30% of the way towards `bg` (and `^bg:` towards `fg`)
---   "GroupA,GroupB"            the first of these that is defined (each may carry modifiers)
---   { fg = …, bold = true }    attributes as `nvim_set_hl` takes them
---   { dark = …, light = … }    one of the above chosen by 'background'
--- A group without a colour the arithmetic needs takes it from `highlights.defaults`.
local M = {}

local ATTRIBUTES = {
  bold = true,
  italic = true,
  underline = true,
  undercurl = true,
  underdouble = true,
  underdotted = true,
  underdashed = true,
  strikethrough = true,
  reverse = true,
  standout = true,
  nocombine = true,
}

local function rgb(n)
  return math.floor(n / 65536) % 256, math.floor(n / 256) % 256, n % 256
end

local function pack(r, g, b)
  local function clamp(x)
    return math.max(0, math.min(255, math.floor(x + 0.5)))
  end
  return clamp(r) * 65536 + clamp(g) * 256 + clamp(b)
end

local function hex(text)
  local digits = text:match("^#?(%x%x%x%x%x%x)$")
  return digits and tonumber(digits, 16) or nil
end

--- The resolved colours and attributes of a group (links followed), or nil when undefined.
local function group_attrs(name)
  local ok, attrs = pcall(vim.api.nvim_get_hl, 0, { name = name, link = false })
  if not ok or type(attrs) ~= "table" or next(attrs) == nil then
    return nil
  end
  return attrs
end

local function defaults_for(defaults)
  local pick = type(defaults) == "table" and (defaults[vim.o.background] or defaults.dark) or nil
  pick = type(pick) == "table" and pick or {}
  return {
    fg = type(pick.fg) == "string" and hex(pick.fg) or (vim.o.background == "light" and 0 or 0xffffff),
    bg = type(pick.bg) == "string" and hex(pick.bg) or (vim.o.background == "light" and 0xffffff or 0),
  }
end

--- One alternative of a string value: "Group", "Group+bg:#…", "#rrggbb", or nil when it does
--- not apply (an undefined group).
local function alternative(text, defaults)
  text = vim.trim(text)
  local colour = hex(text)
  if colour and text:sub(1, 1) == "#" then
    return { fg = colour }
  end
  local group, modifiers = text:match("^([%w_.@]+)(.*)$")
  if not group then
    return nil
  end
  if modifiers == "" then
    if group_attrs(group) == nil and not group:match("^Flemma") then
      return nil
    end
    return { link = group }
  end
  local base = group_attrs(group)
  if base == nil then
    return nil
  end
  local attrs = vim.deepcopy(base)
  local fallback = defaults_for(defaults)
  for sign, key, amount in modifiers:gmatch("([%+%-%^])(%a+):([#%x%.]+)") do
    if key == "fg" or key == "bg" or key == "sp" then
      local current = attrs[key] or fallback[key] or fallback.fg
      local r, g, b = rgb(current)
      if sign == "^" then
        local ratio = tonumber(amount) or 0
        local other = key == "bg" and (attrs.fg or fallback.fg) or (attrs.bg or fallback.bg)
        local r2, g2, b2 = rgb(other)
        attrs[key] = pack(r + (r2 - r) * ratio, g + (g2 - g) * ratio, b + (b2 - b) * ratio)
      else
        local delta = hex(amount)
        if delta then
          local dr, dg, db = rgb(delta)
          local s = sign == "+" and 1 or -1
          attrs[key] = pack(r + s * dr, g + s * dg, b + s * db)
        end
      end
    end
  end
  return attrs
end

--- The `nvim_set_hl` attributes for a style value (see the top of this file); `fallback` (a
--- group name) when nothing in the value applies.
---@param value any
---@param defaults table|nil `highlights.defaults`
---@param fallback string
---@return table
function M.resolve(value, defaults, fallback)
  if type(value) == "table" then
    if value.dark ~= nil or value.light ~= nil then
      return M.resolve(value[vim.o.background] or value.dark or value.light, defaults, fallback)
    end
    local attrs = vim.deepcopy(value)
    attrs.default, attrs.force = nil, nil
    for key, v in pairs(attrs) do
      if type(v) == "string" and (key == "fg" or key == "bg" or key == "sp") then
        attrs[key] = hex(v) or v
      end
    end
    return attrs
  elseif type(value) == "string" then
    local words = vim.split(value, ",", { trimempty = true })
    local only_attributes = #words > 0
    for _, word in ipairs(words) do
      only_attributes = only_attributes and ATTRIBUTES[vim.trim(word)] == true
    end
    if only_attributes then
      local attrs = {}
      for _, word in ipairs(words) do
        attrs[vim.trim(word)] = true
      end
      return attrs
    end
    for _, word in ipairs(words) do
      local attrs = alternative(word, defaults)
      if attrs then
        return attrs
      end
    end
  end
  return { link = fallback }
end

--- `attrs` as plain attributes (a link followed), for combining with other attributes.
function M.flatten(attrs)
  if attrs.link then
    return group_attrs(attrs.link) or {}
  end
  return attrs
end

return M
