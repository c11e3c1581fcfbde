--- flemma.chat.files: a chat the host runs in its file (docs/tasks.md, "Chats on files") while a
--- buffer shows that file. After each write the host says so (`files.changed {path, running}`):
--- the buffer, when it has no unsaved changes, takes the file's new lines (only those that
--- changed; each window keeps its view, and one whose cursor was on the last line follows the
--- end), and is read-only while the run goes on. A buffer with unsaved changes is never touched
--- (the host refuses to start a run on it). `:Flemma run` starts such a run for the current chat.
local lazy = require("flemma.util.lazy")
local host = lazy.require("flemma.host")
local notify = lazy.require("flemma.notify")
local follow = lazy.require("flemma.chat.follow")

local M = {}

local H = {
  --- Buffers read-only for a run: their 'modifiable' before it.
  running = {}, ---@type table<integer, boolean>
  group = vim.api.nvim_create_augroup("flemma.files", { clear = true }),
  --- Buffers that follow a file chat (their FileChangedShell autocmd is made).
  followed = {}, ---@type table<integer, true>
  real = {}, ---@type table<string, string>  real paths, by path
}

--- A path's real path, looked up once: this runs after every write of every file chat.
local function real(path)
  local found = H.real[path]
  if found == nil then
    found = vim.uv.fs_realpath(path) or path
    H.real[path] = found
  end
  return found
end

--- The loaded buffer showing `path`, if any.
local function buffer_of(path)
  local wanted = real(path)
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    local name = vim.api.nvim_buf_get_name(buf)
    if name ~= "" and vim.api.nvim_buf_is_loaded(buf) and real(name) == wanted then
      return buf
    end
  end
  return nil
end

--- The file's lines (a final newline ends the last line), or nil when it cannot be read.
local function read(path)
  local file = io.open(path, "rb")
  if file == nil then
    return nil
  end
  local text = file:read("*a") or ""
  file:close()
  local lines = vim.split(text, "\n", { plain = true })
  if #lines > 1 and lines[#lines] == "" then
    lines[#lines] = nil
  end
  return lines
end

--- Neovim notices the file changed on disk (`:checktime`): a change the buffer already holds is
--- not asked about; any other is, as usual.
local function watch(buf, path)
  if H.followed[buf] then
    return
  end
  H.followed[buf] = true
  vim.api.nvim_create_autocmd("FileChangedShell", {
    group = H.group,
    buffer = buf,
    callback = function()
      local lines = read(path)
      local same = lines ~= nil and vim.deep_equal(lines, vim.api.nvim_buf_get_lines(buf, 0, -1, false))
      vim.v.fcs_choice = same and "" or "ask"
    end,
  })
end

--- The buffer takes `lines`: from the first line that differs; windows keep their view.
local function take(buf, lines)
  local current = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  local first = 1
  while first <= #lines and first <= #current and lines[first] == current[first] do
    first = first + 1
  end
  if first > #lines and first > #current then
    return
  end
  local views = {}
  for _, win in ipairs(vim.fn.win_findbuf(buf)) do
    local cursor = vim.api.nvim_win_get_cursor(win)
    views[win] = {
      view = vim.api.nvim_win_call(win, vim.fn.winsaveview),
      at_end = follow.stance(win, cursor[1], #current) == "cursor",
    }
  end
  local modifiable = vim.bo[buf].modifiable
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, first - 1, -1, false, vim.list_slice(lines, first))
  vim.bo[buf].modifiable = modifiable
  vim.bo[buf].modified = false
  for win, saved in pairs(views) do
    if vim.api.nvim_win_is_valid(win) then
      if saved.at_end then
        pcall(vim.api.nvim_win_set_cursor, win, { vim.api.nvim_buf_line_count(buf), 0 })
      else
        vim.api.nvim_win_call(win, function()
          vim.fn.winrestview(saved.view)
        end)
      end
    end
  end
end

--- Host → Lua `files.changed`: the host wrote `path`; `running`: its run goes on.
function M.changed(params)
  local buf = buffer_of(params.path)
  if buf == nil then
    return
  end
  if not vim.bo[buf].modified then
    local lines = read(params.path)
    if lines ~= nil then
      watch(buf, params.path)
      take(buf, lines)
    end
  end
  if params.running and H.running[buf] == nil then
    H.running[buf] = vim.bo[buf].modifiable
    vim.bo[buf].modifiable = false
  elseif not params.running and H.running[buf] ~= nil then
    vim.bo[buf].modifiable = H.running[buf]
    H.running[buf] = nil
  end
end

--- Host → Lua `files.status`: the buffer showing `path` and whether it has unsaved changes.
function M.status(params)
  local buf = buffer_of(params.path)
  if buf == nil then
    return { modified = false }
  end
  return { bufnr = buf, modified = vim.bo[buf].modified }
end

--- Whether the host runs `bufnr`'s file as a file chat now.
function M.running(bufnr)
  return H.running[bufnr] ~= nil
end

--- A step of the buffer's own (`<C-]>`, `:Flemma send`, `<M-CR>`) is refused while its file runs.
function M.refuse(bufnr)
  if not M.running(bufnr) then
    return false
  end
  notify.warn("this chat's file runs (:Flemma run): wait for it, or <C-c> to stop it")
  return true
end

--- `<C-c>` in a buffer whose file runs: that run is cancelled.
function M.cancel(bufnr)
  return host.notify("chat:cancel-file", { file = vim.api.nvim_buf_get_name(bufnr) })
end

--- The chat buffer `bufnr` (the current one by default) and its file's name; nil when it is not
--- a chat or has no file yet, said to the user (`what`: the command, "compact", "run").
function M.with_file(bufnr, what)
  bufnr = bufnr or vim.api.nvim_get_current_buf()
  local name = vim.bo[bufnr].filetype == "chat" and vim.api.nvim_buf_get_name(bufnr) or nil
  if name == nil or name == "" then
    local message = "%s: this chat has no file yet; write it (:w name.chat), then %s"
    notify.warn(name == nil and "not a chat buffer" or message:format(what, what))
    return nil
  end
  return bufnr, vim.fn.fnamemodify(name, ":p")
end

--- `:Flemma run`: the current chat's file runs in the background, by the host's loop with
--- autopilot, as a sub-agent's chat does; the buffer follows it.
function M.run(bufnr)
  local buf, file = M.with_file(bufnr, "run")
  if buf ~= nil and vim.bo[buf].modified then
    notify.warn("run: this chat has unsaved changes; write it (:w) first")
  elseif buf ~= nil then
    return host.notify("chat:run-file", { bufnr = buf, file = file })
  end
  return false
end

--- Forget a wiped buffer.
function M.forget(bufnr)
  H.running[bufnr] = nil
  H.followed[bufnr] = nil
end

return M
