--- flemma.complete.plugins: Flemma's sources handed to the completion plugins that are installed
--- (docs/completion.md): nvim-cmp gets the source `flemma` (`cmp.register_source`) and, for the
--- `chat` filetype, the sources it has plus `flemma`; blink.cmp gets the provider `flemma`
--- (`add_source_provider`) and, for `chat`, the source (`add_filetype_source`), where its version
--- has these functions (else add it to your blink.cmp configuration yourself). Once per session.
local M = {}

local H = { cmp = false, blink = false }

local function register_cmp()
  local ok, cmp = pcall(require, "cmp")
  if not ok or type(cmp) ~= "table" or type(cmp.register_source) ~= "function" then
    return
  end
  H.cmp = true
  cmp.register_source("flemma", require("flemma.complete.cmp").new())
  local sources = { { name = "flemma" } }
  local current = type(cmp.get_config) == "function" and cmp.get_config().sources or {}
  for _, source in ipairs(current or {}) do
    if source.name ~= "flemma" then
      sources[#sources + 1] = source
    end
  end
  if type(cmp.setup) == "table" and type(cmp.setup.filetype) == "function" then
    cmp.setup.filetype("chat", { sources = sources })
  end
end

local function register_blink()
  local ok, blink = pcall(require, "blink.cmp")
  if not ok or type(blink) ~= "table" or type(blink.add_source_provider) ~= "function" then
    return
  end
  H.blink = true
  pcall(blink.add_source_provider, "flemma", { name = "Flemma", module = "flemma.complete.blink" })
  if type(blink.add_filetype_source) == "function" then
    pcall(blink.add_filetype_source, "chat", "flemma")
  end
end

--- Register with whichever plugin is installed and not registered with yet.
function M.register()
  if not H.cmp then
    register_cmp()
  end
  if not H.blink then
    register_blink()
  end
end

return M
