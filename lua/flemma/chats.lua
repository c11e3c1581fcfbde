--- flemma.chats: `:Flemma chats` (docs/picker.md). Asks the host for the chats of the chat
--- directory, `chats.search` and the current project (the host finds them, reads their heads and
--- keeps what it read per file), shows them in a picker (`flemma.picker`) and opens the one
--- chosen. The preview of a chat (its last exchange) is asked for when the picker shows it.
local lazy = require("flemma.util.lazy")
local config = lazy.require("flemma.config")
local host = lazy.require("flemma.host")
local notify = lazy.require("flemma.notify")
local path = lazy.require("flemma.util.path")
local picker = lazy.require("flemma.picker")
local start = lazy.require("flemma.chat.start")
local M = {}

local H = {}

--- The default chat directory, when the configuration names none.
function M.default_directory()
  return vim.fs.joinpath(vim.fn.stdpath("data"), "flemma", "chats")
end

--- A directory of the configuration, expanded; nil (with a warning) when it cannot be.
function H.expand(dir)
  local expanded, err = path.expand(dir)
  if not expanded then
    notify.warn("chats: " .. tostring(err))
    return nil
  end
  return (vim.fn.fnamemodify(expanded, ":p"):gsub("/$", ""))
end

--- What `chats:list` is asked: the directories, the project, whether children count.
---@return { dirs: string[], cwd: string, children: boolean, state: string, cache: string }
function M.sources()
  local chats = config.get().chats or {}
  local dirs = {}
  for _, dir in ipairs(vim.list_extend({ chats.directory or M.default_directory() }, chats.search or {})) do
    dirs[#dirs + 1] = H.expand(dir)
  end
  return {
    dirs = dirs,
    cwd = vim.fn.getcwd(),
    children = chats.children == true,
    state = vim.fn.stdpath("state"),
    cache = vim.fn.stdpath("cache"),
  }
end

--- Open the chat in file `file`: its window when the current tab shows it, else where
--- `ui.new_chat.layout` shows a chat (the side window by default); an open buffer is reused.
function M.open(file)
  -- The buffer of exactly this file (bufnr() would take a name it only matches in part), and
  -- bufwinid() looks in the current tab only.
  local win = -1
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_get_name(buf) == file then
      win = vim.fn.bufwinid(buf)
    end
  end
  if win ~= -1 then
    vim.api.nvim_set_current_win(win)
    return
  end
  local ok, err = pcall(function()
    local buf = vim.fn.bufadd(file)
    start.show(buf, config.get().ui.new_chat.layout)
    start.focused(buf)
  end)
  if not ok then
    notify.warn("chats: " .. tostring(err):gsub("^Vim%(%a+%):", ""))
  end
end

--- The preview of `row` (its last exchange): `done(lines)` once the host answers.
function M.preview(row, done)
  host.call("chats:preview", { path = row.path }, function(err, answer)
    if err then
      done({ "(no preview: " .. tostring(err) .. ")" })
    else
      done(answer.lines or {})
    end
  end)
end

--- `:Flemma chats`: the chats in the picker; the chosen one opens.
function M.pick()
  local sources = M.sources()
  host.call("chats:list", sources, function(err, answer)
    if err then
      notify.warn("chats: " .. tostring(err))
      return
    end
    local rows = answer.chats or {}
    if #rows == 0 then
      local shown = vim.tbl_map(function(dir)
        return vim.fn.fnamemodify(dir, ":~")
      end, sources.dirs)
      notify.info("chats: no chats in " .. table.concat(shown, ", ") .. " or this project")
      return
    end
    picker.show(rows, { preview = M.preview, open = M.open, title = "Chats" })
  end)
end

return M
