--- flemma.integrations.bufferline: a busy indicator on the bufferline.nvim tabs of chat buffers
--- whose request or tools are running. The busy state is the statusline's (the buffer's locks,
--- see flemma.statusline); this module only shows it and redraws the tabline when it changes.
---
--- In bufferline's options:
---   get_element_icon = require("flemma.integrations.bufferline").get_element_icon,
---   -- or, keeping the file icon and putting the indicator after the name:
---   name_formatter = require("flemma.integrations.bufferline").name_formatter,
local lazy = require("flemma.util.lazy")
local locks = require("flemma.chat.locks")
local config = lazy.require("flemma.config")
local statusline = lazy.require("flemma.statusline")
local M = {}

local H = {
  used = false, -- a bufferline callback ran: from now on, busy changes redraw the tabline
  redraw_pending = false,
}

--- The highlight of the busy icon; by default the statusline's busy colour (`highlights.busy`).
M.HIGHLIGHT = "FlemmaBufferlineBusy"

local function icon()
  local ok, value = pcall(function()
    return config.get().integrations.bufferline.icon
  end)
  return ok and type(value) == "string" and value or "󰔟"
end

local function is_chat(bufnr)
  return vim.api.nvim_buf_is_valid(bufnr) and vim.bo[bufnr].filetype == "chat"
end

local function busy(bufnr)
  local state = statusline.state(bufnr)
  return state ~= nil
end

--- The chat buffer a bufferline element stands for (bufferline passes its path, not its number).
---@param opts table  bufferline's `{ path, filetype, extension, directory, type }`
---@return integer|nil
function H.find(opts)
  if opts.directory or (opts.filetype ~= nil and opts.filetype ~= "chat") then
    return nil
  end
  local path = opts.path
  if type(path) ~= "string" or path == "" then
    return nil
  end
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_get_name(bufnr) == path and is_chat(bufnr) then
      return bufnr
    end
  end
  return nil
end

--- bufferline's `get_element_icon`: the busy icon and its highlight for a chat buffer whose
--- request or tools run; nil otherwise (bufferline then shows the file's usual icon).
---@param opts table
---@return string|nil icon
---@return string|nil highlight
function M.get_element_icon(opts)
  H.used = true
  if type(opts) ~= "table" then
    return nil
  end
  local bufnr = H.find(opts)
  if bufnr and busy(bufnr) then
    return icon(), M.HIGHLIGHT
  end
  return nil
end

--- bufferline's `name_formatter`: the name followed by the busy icon while the chat buffer (for
--- a tab: any chat buffer shown in it) is busy; nil otherwise (bufferline keeps its name).
---@param opts table  `{ name, path, bufnr }`, or `{ name, path, tabnr, buffers }` in tabs mode
---@return string|nil
function M.name_formatter(opts)
  H.used = true
  if type(opts) ~= "table" or type(opts.name) ~= "string" then
    return nil
  end
  local candidates = {}
  if type(opts.bufnr) == "number" then
    candidates = { opts.bufnr }
  elseif type(opts.buffers) == "table" then
    candidates = opts.buffers
  end
  for _, bufnr in ipairs(candidates) do
    if type(bufnr) == "number" and is_chat(bufnr) and busy(bufnr) then
      return opts.name .. " " .. icon()
    end
  end
  return nil
end

--- Whether a chat buffer is busy, as the indicator shows it.
---@param bufnr integer|nil
---@return boolean
function M.is_busy(bufnr)
  if bufnr == nil or bufnr == 0 then
    bufnr = vim.api.nvim_get_current_buf()
  end
  return is_chat(bufnr) and busy(bufnr)
end

--- Redraw the tabline soon (coalesced), once bufferline has used one of the callbacks above.
--- Called when a buffer lock is taken or released and on the lifecycle events.
function M.refresh()
  -- NOTE: as for the statusline, no forced redraw for people who do not show the indicator:
  -- a redraw is main-loop work, and a <C-c> typed during it is taken as an interrupt.
  if not H.used or H.redraw_pending then
    return
  end
  H.redraw_pending = true
  vim.schedule(function()
    H.redraw_pending = false
    -- bufferline draws the tabline from `%!`, evaluated afresh on every tabline redraw.
    pcall(vim.cmd.redrawtabline)
  end)
end

--- Define `FlemmaBufferlineBusy` as a default link to the statusline's busy highlight.
function M.define_highlight()
  pcall(vim.api.nvim_set_hl, 0, M.HIGHLIGHT, { link = "FlemmaStatuslineBusy", default = true })
end

-- The busy indicator shows whether a chat's buffer is locked.
locks.subscribe({
  changed = function()
    M.refresh()
  end,
})

return M
