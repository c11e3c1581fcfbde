--- flemma.complete.plugins: Flemma's source (flemma.complete.source) handed to the completion
--- plugins that are installed (docs/completion.md): nvim-cmp gets the source `flemma`
--- (`cmp.register_source`) and, for the `chat` filetype, the sources it has with `flemma` first;
--- blink.cmp gets the provider `flemma` (`add_source_provider`) and, for `chat`, the source
--- (`add_filetype_source`), where its version has these functions (else add it to your blink.cmp
--- configuration yourself). Once per plugin and session.
local lazy = require("flemma.util.lazy")
local source = lazy.require("flemma.complete.source")
local M = {}

local H = { done = {} }

--- The module blink.cmp loads by name.
local MODULE = "flemma.complete.source"

--- Each plugin: its module, the function it must have, and how to register with it.
local PLUGINS = {
  cmp = {
    needs = "register_source",
    register = function(cmp)
      cmp.register_source("flemma", source.new())
      local sources = { { name = "flemma" } }
      local current = type(cmp.get_config) == "function" and cmp.get_config().sources or {}
      for _, entry in ipairs(current or {}) do
        if entry.name ~= "flemma" then
          sources[#sources + 1] = entry
        end
      end
      if type(cmp.setup) == "table" and type(cmp.setup.filetype) == "function" then
        cmp.setup.filetype("chat", { sources = sources })
      end
    end,
  },
  ["blink.cmp"] = {
    needs = "add_source_provider",
    register = function(blink)
      pcall(blink.add_source_provider, "flemma", { name = "Flemma", module = MODULE })
      if type(blink.add_filetype_source) == "function" then
        pcall(blink.add_filetype_source, "chat", "flemma")
      end
    end,
  },
}

--- Register with whichever plugin is installed and not registered with yet.
function M.register()
  for name, plugin in pairs(PLUGINS) do
    if not H.done[name] then
      local ok, module = pcall(require, name)
      if ok and type(module) == "table" and type(module[plugin.needs]) == "function" then
        H.done[name] = true
        plugin.register(module)
      end
    end
  end
end

return M
