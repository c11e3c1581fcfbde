--- flemma.ui.scratch: the read-only scratch buffer a report opens in (`:Flemma status`,
--- `:Flemma context`, `:Flemma keys`, and any report the user asked for that would not fit on the
--- command line): one buffer per name, in a split below, closed with `q`, reused while open.
local M = {}

--- Show `lines` in the scratch buffer `name` (`flemma://…`), made once, in a split below.
---@param name string
---@param lines string[]
function M.show(name, lines)
  local buf = vim.fn.bufnr(name)
  if buf == -1 or not vim.api.nvim_buf_is_valid(buf) then
    buf = vim.api.nvim_create_buf(false, true)
    vim.api.nvim_buf_set_name(buf, name)
    vim.bo[buf].bufhidden = "wipe"
    vim.keymap.set("n", "q", "<Cmd>close<CR>", { buffer = buf, nowait = true, desc = "Close" })
  end
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  local win = vim.fn.bufwinid(buf)
  if win == -1 then
    vim.cmd(string.format("botright %dsplit", math.min(#lines + 1, math.floor(vim.o.lines / 2))))
    vim.api.nvim_win_set_buf(0, buf)
  else
    vim.api.nvim_set_current_win(win)
  end
end

return M
