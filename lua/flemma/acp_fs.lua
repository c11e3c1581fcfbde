--- flemma.acp_fs: what Neovim answers for the chats' ACP agents' file requests (docs/agents.md,
--- "Files and terminals"): the text of a loaded buffer showing a file, unsaved changes included,
--- so that an agent reads what you see; and whether it has unsaved changes, which a write of the
--- agent's never overwrites.
local M = {}

--- The loaded buffer showing `path` (compared by real path), if any.
local function buffer_of(path)
  local wanted = vim.uv.fs_realpath(path) or path
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    local name = vim.api.nvim_buf_get_name(buf)
    if name ~= "" and vim.api.nvim_buf_is_loaded(buf) and (vim.uv.fs_realpath(name) or name) == wanted then
      return buf
    end
  end
  return nil
end

--- Host → Lua `acp.buffer {path}`: `{text, modified}` of the buffer showing it, else `{}`.
function M.buffer(params)
  local buf = buffer_of(params.path)
  if buf == nil then
    return vim.empty_dict()
  end
  local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  local text = table.concat(lines, "\n")
  local empty = #lines == 1 and lines[1] == ""
  if not empty and (vim.bo[buf].eol or vim.bo[buf].fixeol) then
    text = text .. "\n"
  end
  return { text = text, modified = vim.bo[buf].modified }
end

return M
