--- flemma.compact: `:Flemma compact` on the editor's side (docs/context.md, "Compaction"). The host
--- asks the model for the summary and writes the new chat; Lua names the file it continues and
--- opens the new one. The old buffer and its file are only read.
local lazy = require("flemma.util.lazy")
local trust = lazy.require("flemma.config.trust")
local host = lazy.require("flemma.host")
local files = lazy.require("flemma.chat.files")
local log = lazy.require("flemma.host.log")
local M = {}

--- `:Flemma compact`: a chat with a file goes to the host; one without a file is refused (the
--- new chat is written beside the old one, and it has no place yet).
function M.run(bufnr)
  local file
  bufnr, file = files.with_file(bufnr, "compact")
  if bufnr == nil then
    return false
  end
  return host.notify("chat:compact", { bufnr = bufnr, file = file, modified = vim.bo[bufnr].modified })
end

--- The host wrote the new chat at `path`: open it in the current window, as `:edit` would (the
--- old buffer stays loaded and listed). When the old chat was trusted, the new one is too: it
--- holds the same frontmatter, the old system prompt and messages, and the model's summary as a
--- reply (never read for templates or file references).
function M.open(params)
  local old = params.bufnr
  local trusted = false
  if vim.api.nvim_buf_is_valid(old) then
    local ok, state = pcall(trust.state, old)
    trusted = ok and type(state) == "table" and state.trusted == true
  end
  local ok, err = pcall(vim.cmd.edit, vim.fn.fnameescape(params.path))
  if not ok then
    log.write("warn", "compact: opening " .. params.path .. " failed: " .. tostring(err))
    return { opened = false }
  end
  local new = vim.api.nvim_get_current_buf()
  if trusted then
    pcall(vim.secure.trust, { action = "allow", bufnr = new })
  end
  -- The cursor on the last line: the message to send next, or the empty one to write.
  pcall(vim.api.nvim_win_set_cursor, 0, { vim.api.nvim_buf_line_count(new), 0 })
  return { opened = true, bufnr = new }
end

return M
