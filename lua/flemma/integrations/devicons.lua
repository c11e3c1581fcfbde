--- flemma.integrations.devicons: an icon for `.chat` files (extension and filetype `chat`) in
--- nvim-web-devicons, from `integrations.devicons`. Registered whenever devicons is loaded: at
--- start-up, when a plugin manager loads it later, on the first chat buffer; again after
--- devicons rebuilt its tables (a 'background' change) and after `setup()`.
local lazy = require("flemma.util.lazy")
local flemma_config = lazy.require("flemma.config")
local log = lazy.require("flemma.host.log")
local M = {}

local H = {
  registered = nil, ---@type string|nil  the icon Flemma registered last
}

--- The name devicons derives its highlight group from (`DevIcon` .. name).
M.NAME = "FlemmaChat"
--- The icon's colour (a colorscheme may redefine `DevIconFlemmaChat`).
local COLOR, CTERM_COLOR = "#d7875f", "173"

local function options()
  local ok, config = pcall(function()
    return flemma_config.get().integrations.devicons
  end)
  if ok and type(config) == "table" then
    return config
  end
  return { enabled = true, icon = "∴" }
end

--- The loaded devicons module, or nil. It is required here only when it is on the runtimepath
--- already (a plugin manager that loads it lazily keeps it off the path until then).
function H.module(load)
  local mod = package.loaded["nvim-web-devicons"]
  if mod == nil and load and #vim.api.nvim_get_runtime_file("lua/nvim-web-devicons.lua", false) > 0 then
    local ok, loaded = pcall(require, "nvim-web-devicons")
    mod = ok and loaded or nil
  end
  if type(mod) ~= "table" or type(mod.set_icon) ~= "function" then
    return nil
  end
  return mod
end

--- The icon devicons has for `.chat` files now, if any (nil when it cannot say).
function H.current(mod)
  if type(mod.get_icon) ~= "function" then
    return nil
  end
  local ok, icon = pcall(mod.get_icon, "file.chat", "chat", { default = false, strict = false })
  return ok and icon or nil
end

--- Register the icon with devicons when it is loaded and the integration is enabled.
--- An icon for `chat` that the user gave devicons (its `override`) is left alone.
---@param opts { load: boolean|nil }|nil  `load`: require devicons if it is on the runtimepath
---@return boolean registered
function M.register(opts)
  local config = options()
  if config.enabled == false then
    return false
  end
  local mod = H.module(opts and opts.load)
  if not mod then
    return false
  end
  local current = H.current(mod)
  if current ~= nil and current == H.registered and current == config.icon then
    return true
  end
  if current ~= nil and current ~= H.registered and current ~= config.icon then
    -- Someone else's icon (the user's override): theirs wins.
    return false
  end
  local ok, err = pcall(mod.set_icon, {
    chat = { icon = config.icon, color = COLOR, cterm_color = CTERM_COLOR, name = M.NAME },
  })
  if not ok then
    log.write("warn", "devicons: set_icon failed: " .. tostring(err))
    return false
  end
  if type(mod.set_icon_by_filetype) == "function" then
    pcall(mod.set_icon_by_filetype, { chat = "chat" })
  end
  H.registered = config.icon
  return true
end

return M
