--- flemma.tasks: `:Flemma tasks` (the chat's children in a scratch report; `<CR>` on a line, or
--- `:Flemma tasks <n>`, opens one) and `:Flemma task:return` (a continued child's answer sent back
--- to its parent as a note at the end of the parent's chat; docs/tasks.md, "Seeing a task").
local lazy = require("flemma.util.lazy")
local host = lazy.require("flemma.host")
local navigation = lazy.require("flemma.chat.navigation")
local diff = lazy.require("flemma.review.diff")
local notify = lazy.require("flemma.notify")
local scan = lazy.require("flemma.ui.scan")
local scratch = lazy.require("flemma.ui.scratch")
local M = {}

local REPORT = "flemma://tasks"

--- The current buffer and its file, or nil (with a warning) when it has none.
local function chat_file(what)
  local bufnr = vim.api.nvim_get_current_buf()
  local file = vim.api.nvim_buf_get_name(bufnr)
  if file == "" then
    notify.warn(what .. ": this chat has no file yet (write it first)")
    return nil
  end
  return { bufnr = bufnr, file = vim.fn.fnamemodify(file, ":p") }
end

--- Open child `n` of the list `tasks` in window `win` (the chat's, when it is still there).
local function open(tasks, n, win)
  local task = tasks[n]
  if not task then
    notify.warn(string.format("tasks: no task %s (this chat has %d)", tostring(n), #tasks))
    return
  end
  if win and vim.api.nvim_win_is_valid(win) then
    vim.api.nvim_set_current_win(win)
  end
  navigation.open(task.path)
end

--- `:Flemma tasks [n]`.
---@param args string[]|nil
function M.list(args)
  local n = args and args[1]
  if n ~= nil and not tostring(n):match("^%d+$") then
    error(string.format("expected a task's number or nothing, got '%s'", n))
  end
  local chat = chat_file("tasks")
  if not chat then
    return
  end
  local win = vim.api.nvim_get_current_win()
  host.call("tasks:list", chat, function(err, answer)
    if err then
      notify.warn("tasks: " .. tostring(err))
      return
    end
    local tasks = answer.tasks or {}
    if n ~= nil then
      open(tasks, tonumber(n), win)
    elseif #tasks == 0 then
      notify.info(answer.lines[1] or "no tasks")
    else
      scratch.show(REPORT, answer.lines)
      local buf = vim.api.nvim_get_current_buf()
      vim.keymap.set("n", "<CR>", function()
        -- The report's first line is its head; line k + 1 is task k.
        local row = vim.api.nvim_win_get_cursor(0)[1] - 1
        if row >= 1 then
          vim.cmd("close")
          open(tasks, row, win)
        end
      end, { buffer = buf, nowait = true, desc = "Open the task under the cursor" })
    end
  end)
end

--- Lines `note` added to the chat in `lines`: into its last message when that is an `@You:` (an
--- empty one filled, a draft followed after a blank line), else as a new `@You:` at the end.
--- Returns the 0-based row to insert at and the lines to insert.
local function placement(lines, note)
  local structure = scan.scan(lines)
  local last = structure.messages[#structure.messages]
  if last and last.role == "You" then
    if last.last_row == last.row then
      return last.row + 1, note
    end
    return last.last_row + 1, vim.list_extend({ "" }, note)
  end
  local insert = vim.list_extend({ "@You:" }, note)
  if #lines > 0 and vim.trim(lines[#lines]) ~= "" then
    table.insert(insert, 1, "")
  end
  return #lines, insert
end

--- Add `note` to the chat in file `parent`; its buffer is written when it had no unsaved changes.
local function deliver(parent, note)
  local pbuf = vim.fn.bufadd(parent)
  vim.fn.bufload(pbuf)
  if not vim.bo[pbuf].modifiable then
    notify.warn("task:return: " .. vim.fn.fnamemodify(parent, ":~:.") .. " is busy (a reply streams into it)")
    return
  end
  local clean = not vim.bo[pbuf].modified
  local row, insert = placement(vim.api.nvim_buf_get_lines(pbuf, 0, -1, false), note)
  vim.api.nvim_buf_set_lines(pbuf, row, row, false, insert)
  if clean then
    vim.api.nvim_buf_call(pbuf, function()
      vim.cmd("silent write")
    end)
  end
  notify.info(
    string.format(
      "task:return: the answer is a note at the end of %s; its next send carries it",
      vim.fn.fnamemodify(parent, ":~:.")
    )
  )
end

--- `:Flemma task:return`: the current child's latest answer, to its parent.
function M.send_back()
  local chat = chat_file("task:return")
  if not chat then
    return
  end
  host.call("task:return", chat, function(err, answer)
    if err then
      notify.warn("task:return: " .. tostring(err))
    elseif answer.message then
      notify.warn("task:return: " .. answer.message)
    else
      deliver(answer.parent, answer.lines)
    end
  end)
end

--- A window of the current tab that shows `buf`, or nil.
local function window_in_tab(buf)
  local tab = vim.api.nvim_get_current_tabpage()
  for _, win in ipairs(vim.fn.win_findbuf(buf)) do
    if vim.api.nvim_win_get_tabpage(win) == tab then
      return win
    end
  end
  return nil
end

--- `<M-CR>` on a `task` call whose child waits (the host's `tasks.show`, docs/tasks.md): the
--- child's file in a split beside the parent (or the window already showing it) with the cursor
--- on its first waiting call, and that call's diff when it changes a file. Nothing is decided
--- here: the user decides there. The parent's window keeps its cursor.
---@param params { parent: integer, path: string, calls: { id: string, diff: boolean }[] }
function M.show(params)
  local win = window_in_tab(vim.fn.bufadd(params.path))
  if win then
    vim.api.nvim_set_current_win(win)
  else
    local parent = vim.fn.bufwinid(params.parent)
    if parent ~= -1 then
      vim.api.nvim_set_current_win(parent)
    end
    local ok, err = pcall(vim.cmd, "split " .. vim.fn.fnameescape(params.path))
    if not ok then
      notify.warn("task: " .. tostring(err):gsub("^Vim%(%a+%):", ""))
      return
    end
  end
  local buf = vim.api.nvim_get_current_buf()
  local structure = scan.scan(vim.api.nvim_buf_get_lines(buf, 0, -1, false))
  for _, call in ipairs(params.calls or {}) do
    local block = scan.tool_block(structure, "tool_result", call.id)
    if block then
      vim.api.nvim_win_set_cursor(0, { block.row + 1, 0 })
      vim.cmd("normal! zv")
      if call.diff then
        diff.request(buf, block.row)
      end
      return
    end
  end
end

return M
