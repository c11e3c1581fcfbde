--- flemma.util.registry: a registry kept in Lua and synced to the host. The entries (with their
--- functions) stay in Neovim; the host gets the whole set as data, in one notification: once per
--- tick after changes (only while a host runs) and again whenever a host starts, before anything
--- else is sent to it. Tools, sandbox backends, approval resolvers, credential resolvers and
--- frontmatter languages are such registries (docs/architecture.md).
---
---   local registry = require("flemma.util.registry").new({
---     method = "secrets:define",               -- the host method that takes the whole set
---     payload = function(self) return { resolvers = … } end,   -- the set as data
---   })
---   registry:set(name, entry)   -- add or replace, then sync
---   registry:follow_host()      -- once, at bootstrap: send the set to every host that starts
local lazy = require("flemma.util.lazy")
local hooks = lazy.require("flemma.hooks")
local host = lazy.require("flemma.host")
local M = {}

---@class flemma.util.Registry
---@field entries table<string, any>
---@field method string
---@field private payload_of fun(self: flemma.util.Registry): table
---@field private scheduled boolean
---@field private following boolean
local Registry = {}
Registry.__index = Registry

--- A new, empty registry.
---@param opts { method: string, payload: fun(self: flemma.util.Registry): table }
---@return flemma.util.Registry
function M.new(opts)
  vim.validate({ method = { opts.method, "string" }, payload = { opts.payload, "function" } })
  return setmetatable({
    entries = {},
    method = opts.method,
    payload_of = opts.payload,
    scheduled = false,
    following = false,
  }, Registry)
end

--- The entry of `name`, or nil.
function Registry:get(name)
  return self.entries[name]
end

--- Add or replace an entry; the host hears of it on the next tick.
function Registry:set(name, entry)
  self.entries[name] = entry
  self:changed()
end

--- Remove an entry; true when it existed (only then does the host hear of it).
---@return boolean
function Registry:remove(name)
  if self.entries[name] == nil then
    return false
  end
  self.entries[name] = nil
  self:changed()
  return true
end

--- The names of the entries, sorted.
---@return string[]
function Registry:names()
  local names = vim.tbl_keys(self.entries)
  table.sort(names)
  return names
end

--- What the host receives: the whole set as data.
---@return table
function Registry:payload()
  return self.payload_of(self)
end

--- Send the whole set now, if a host runs.
function Registry:send()
  if host.channel() then
    host.notify(self.method, self:payload())
  end
end

--- Something the payload shows changed: send the set once, on the next tick.
function Registry:changed()
  if self.scheduled then
    return
  end
  self.scheduled = true
  vim.schedule(function()
    self.scheduled = false
    self:send()
  end)
end

--- Send the set to every host that starts, as soon as it starts (once; later calls do nothing).
function Registry:follow_host()
  if self.following then
    return
  end
  self.following = true
  hooks.on("host:started", function()
    self:send()
  end)
end

return M
