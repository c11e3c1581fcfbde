--- flemma.navigation: `gd` (tool use <-> result, or the referenced file) and `gf` (`@./file`
--- references and `include()`), answered by the host, which holds the buffer's parsed tree
--- (`buffer:definition`, `buffer:hover`; docs/navigation.md). The question goes out as a `call`
--- and the answer comes back as a Lua call: Neovim never waits for it. The in-process language
--- server (flemma.lsp) asks the same questions.
local lazy = require("flemma.util.lazy")
local host = lazy.require("flemma.host")
local notify = lazy.require("flemma.notify")
local M = {}

--- The question about a position: the buffer, the 0-based row and byte column, and what its
--- references are relative to (the buffer's file, or the current directory without one).
---@return table
function M.position(bufnr, row, col)
  return {
    bufnr = bufnr,
    row = row,
    col = col,
    file = vim.api.nvim_buf_get_name(bufnr),
    cwd = vim.fn.getcwd(),
  }
end

--- Ask the host where a position leads: `callback(err, answer)` with `{path}`, `{row}` (0-based),
--- `{message}`, or nil (`files_only`, for `gf`: no reference there).
function M.definition(bufnr, row, col, files_only, callback)
  local params = M.position(bufnr, row, col)
  params.files_only = files_only or nil
  host.call("buffer:definition", params, function(err, answer)
    callback(err, answer ~= vim.NIL and answer or nil)
  end)
end

--- Ask the host what is at a position: `callback(err, markdown)` (nil when nothing is).
function M.hover(bufnr, row, col, callback)
  host.call("buffer:hover", M.position(bufnr, row, col), function(err, text)
    callback(err, text ~= vim.NIL and text or nil)
  end)
end

--- Move the cursor to a 0-based row (column 0), keeping the jump in the jumplist and opening
--- folds there.
local function jump_to(row)
  vim.cmd("normal! m'")
  vim.api.nvim_win_set_cursor(0, { row + 1, 0 })
  vim.cmd("normal! zv")
end

--- Open a file in the current window (`:edit`), reporting a failure briefly.
function M.open(path)
  local ok, err = pcall(vim.cmd.edit, vim.fn.fnameescape(path))
  if not ok then
    notify.warn(tostring(err):gsub("^Vim%(%a+%):", ""))
    return false
  end
  return true
end

--- Ask about the cursor's position in the current window; `on_answer(answer)` runs when the
--- answer comes, if the window still shows the buffer and is still the current one.
local function ask_at_cursor(key, files_only, on_answer)
  local win = vim.api.nvim_get_current_win()
  local bufnr = vim.api.nvim_win_get_buf(win)
  local cursor = vim.api.nvim_win_get_cursor(win)
  M.definition(bufnr, cursor[1] - 1, cursor[2], files_only, function(err, answer)
    if vim.api.nvim_get_current_win() ~= win or vim.api.nvim_win_get_buf(win) ~= bufnr then
      return
    end
    if err then
      notify.warn(key .. ": " .. tostring(err))
      return
    end
    on_answer(answer)
  end)
end

--- `gd` in a chat buffer: the matching tool result or use, or the referenced file.
function M.goto_definition()
  ask_at_cursor("gd", false, function(answer)
    if answer == nil then
      return
    elseif answer.message then
      notify.info(answer.message)
    elseif answer.path then
      M.open(answer.path)
    else
      jump_to(answer.row)
    end
  end)
end

--- Neovim's own `gf` (with the count it was given), its error shown as Neovim shows it.
local function builtin_gf(count)
  local ok, err = pcall(vim.cmd, "normal! " .. (count > 0 and count or "") .. "gf")
  if not ok then
    -- "vim/_editor.lua:…: nvim_exec2(): Vim(normal):E447: …" on 0.10: from the error number on.
    local text = tostring(err)
    local message = text:match("E%d+:.*$") or text
    vim.v.errmsg = message
    vim.api.nvim_echo({ { message, "ErrorMsg" } }, true, {})
  end
end

--- `gf` in a chat buffer: the `@./file` reference (or `include()`) under the cursor, as the host
--- reads it; Neovim's own `gf` anywhere else.
function M.goto_file()
  local count = vim.v.count
  ask_at_cursor("gf", true, function(answer)
    if answer == nil then
      builtin_gf(count)
    elseif answer.message then
      notify.warn(answer.message)
    else
      M.open(answer.path)
    end
  end)
end

return M
