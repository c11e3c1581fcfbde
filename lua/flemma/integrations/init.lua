--- flemma.integrations: glue to other plugins, each a no-op when its plugin is absent.
--- - nvim-web-devicons: an icon for `.chat` files (flemma.integrations.devicons)
--- - bufferline.nvim: a busy indicator users plug in (flemma.integrations.bufferline)
--- - nvim-notify: used by flemma.notify (flemma.integrations.nvim_notify)
--- - nvim-treesitter-context: kept out of chat buffers (flemma.integrations.treesitter_context)
--- Plugins may load after Flemma (lazy.nvim and others), so the work is redone when they may
--- have appeared: at VimEnter, when lazy.nvim loads a plugin, when a chat buffer opens.
local lazy = require("flemma.util.lazy")
local hooks = lazy.require("flemma.hooks")
local log = lazy.require("flemma.host.log")
local bufferline = lazy.require("flemma.integrations.bufferline")
local flemma_integrations_devicons = lazy.require("flemma.integrations.devicons")
local flemma_integrations_treesitter_context = lazy.require("flemma.integrations.treesitter_context")
local M = {}

local H = { bootstrapped = false }

local function devicons(load)
  local ok, err = pcall(function()
    flemma_integrations_devicons.register({ load = load })
  end)
  if not ok then
    log.write("warn", "integrations: devicons: " .. tostring(err))
  end
end

local function treesitter_context()
  pcall(function()
    flemma_integrations_treesitter_context.ensure()
  end)
end

--- Apply the current configuration (run by `setup()`).
function M.apply()
  devicons(false)
  treesitter_context()
  bufferline.define_highlight()
  bufferline.refresh()
end

--- Autocmds that catch plugins loading late; run once from `flemma.bootstrap()`.
function M.bootstrap()
  if H.bootstrapped then
    return
  end
  H.bootstrapped = true
  local group = vim.api.nvim_create_augroup("flemma.integrations", { clear = true })
  -- Not required here: devicons is loaded at start-up only if someone else needs it.
  if vim.v.vim_did_enter == 1 then
    devicons(false)
  else
    vim.api.nvim_create_autocmd("VimEnter", {
      group = group,
      once = true,
      desc = "Flemma: register the .chat icon with nvim-web-devicons",
      callback = function()
        devicons(false)
      end,
    })
  end
  -- lazy.nvim announces each plugin it loads (`data` is the plugin's name).
  vim.api.nvim_create_autocmd("User", {
    group = group,
    pattern = "LazyLoad",
    desc = "Flemma: integrations with a plugin loaded late",
    callback = function(ev)
      local name = type(ev.data) == "string" and ev.data or ""
      if name:find("devicons", 1, true) then
        devicons(false)
      elseif name:find("treesitter-context", 1, true) then
        treesitter_context()
      end
    end,
  })
  vim.api.nvim_create_autocmd({ "BufReadPre", "BufNewFile" }, {
    group = group,
    pattern = "*.chat",
    desc = "Flemma: keep nvim-treesitter-context out of chat buffers",
    callback = treesitter_context,
  })
  vim.api.nvim_create_autocmd("FileType", {
    group = group,
    pattern = "chat",
    desc = "Flemma: integrations for chat buffers",
    callback = function()
      treesitter_context()
      -- A chat is open: its tab or file tree wants the icon, so load devicons if installed.
      devicons(true)
    end,
  })
  -- nvim-web-devicons rebuilds its tables when 'background' changes (dropping added icons).
  vim.api.nvim_create_autocmd("OptionSet", {
    group = group,
    pattern = "background",
    desc = "Flemma: register the .chat icon again",
    callback = function()
      vim.schedule(function()
        devicons(false)
      end)
    end,
  })
  vim.api.nvim_create_autocmd("ColorScheme", {
    group = group,
    desc = "Flemma: define FlemmaBufferlineBusy again",
    callback = function()
      bufferline.define_highlight()
    end,
  })
  bufferline.define_highlight()
  -- Busy state changes on these events besides the buffer locks (see flemma.buffer).
  local events = { "request:sending", "request:finished", "tool:executing", "tool:completed", "host:exited" }
  for _, name in ipairs(events) do
    hooks.on(name, function()
      bufferline.refresh()
    end)
  end
end

return M
