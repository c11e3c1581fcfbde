--- flemma.chat.start: a new chat from anywhere (docs/chats.md, "Starting chats"). `:Flemma new
--- [name]` opens a chat in `chats.directory` holding `chats.template`, laid out per
--- `ui.new_chat.layout`; `:Flemma toggle` shows and hides the side chat. The chat is a buffer
--- named after a file that does not exist yet: nothing is written until you write it (as any
--- `:e new.chat`, it is yours and trusted, docs/security.md), and no name is ever one that a file
--- or a buffer already has. Also keeps the last used chat (the one most recently focused).
--- Every option is read from `setup()`, never from a chat's frontmatter.
local lazy = require("flemma.util.lazy")
local config = lazy.require("flemma.config")
local path = lazy.require("flemma.util.path")
local scan = lazy.require("flemma.ui.scan")
local M = {}

local H = {
  --- The chat buffer most recently focused.
  last = nil, ---@type integer|nil
}

--- The window variable that marks the side chat's window.
local SIDE = "flemma_side_chat"

--- `setup()`'s options (not a buffer's).
local function options()
  local cfg = config.get()
  return cfg.chats, cfg.ui.new_chat
end

--- A chat buffer got focus: it is the last used one.
function M.focused(bufnr)
  if vim.api.nvim_buf_is_valid(bufnr) and vim.bo[bufnr].filetype == "chat" then
    H.last = bufnr
  end
end

--- The last used chat buffer, if it still exists: still a chat, or unloaded (`:bdelete`) with
--- its file's name (showing it reads the file again).
function M.last()
  local buf = H.last
  local valid = buf and vim.api.nvim_buf_is_valid(buf)
  if valid and vim.api.nvim_buf_is_loaded(buf) and vim.bo[buf].filetype == "chat" then
    return buf
  end
  if valid and not vim.api.nvim_buf_is_loaded(buf) and vim.api.nvim_buf_get_name(buf) ~= "" then
    return buf
  end
  H.last = nil
  return nil
end

--- The directory new chats go in (made if missing); an error says what is wrong.
function M.directory()
  local setting = options().directory
  local expanded, err = path.expand(setting)
  if expanded == nil or expanded == "" then
    error(string.format("chats.directory '%s': %s", setting, err or "is empty"), 0)
  end
  local dir = vim.fn.fnamemodify(expanded, ":p"):gsub("(.)/$", "%1")
  local ok, made = pcall(vim.fn.mkdir, dir, "p")
  if not ok or (made == 0 and vim.fn.isdirectory(dir) == 0) then
    error(string.format("chats.directory: cannot make %s: %s", dir, ok and "mkdir failed" or made), 0)
  end
  return dir
end

--- `name` as a file name: ASCII letters lower-cased, anything but letters, digits, `.`, `_`, `-`
--- (and UTF-8 text) a single `-`, no leading dots, no `.chat` at the end; "" when nothing is left.
function M.slug(name)
  local base = vim.trim(name or ""):gsub("%.chat$", ""):lower()
  base = base:gsub("[^%w%._%-\128-\255]+", "-"):gsub("%-%-+", "-")
  base = base:gsub("^[%.%-]+", ""):gsub("%-+$", "")
  return base
end

--- Whether `file` is taken: a file (or anything) on disk, or a buffer's name.
local function taken(file)
  return vim.uv.fs_lstat(file) ~= nil or vim.fn.bufexists(file) == 1
end

--- The path of a new chat in `dir`: `name` slugged, or the date and time; `-2`, `-3`… added
--- until no file and no buffer has it.
function M.free_path(dir, name)
  local base = M.slug(name)
  if base == "" then
    base = os.date("%Y-%m-%d-%H%M")
  end
  local file = vim.fs.joinpath(dir, base .. ".chat")
  local n = 1
  while taken(file) do
    n = n + 1
    file = vim.fs.joinpath(dir, string.format("%s-%d.chat", base, n))
  end
  return file
end

--- The template's text: `chats.template` itself, or the file it names (one line starting with
--- `/`, `~` or `$`).
function M.template()
  local text = options().template
  if text:find("\n", 1, true) or not text:match("^[/~$]") then
    return text
  end
  local file, err = path.expand(text)
  local ok, lines = pcall(vim.fn.readfile, file or "")
  if file == nil or not ok then
    error(string.format("chats.template: cannot read %s%s", text, err and (": " .. err) or ""), 0)
  end
  return table.concat(lines, "\n")
end

--- The template as lines, ending in an empty `@You:` (added when it has none), and the 1-based
--- row of its empty line, where the cursor goes.
function M.template_lines(text)
  local lines = vim.split(text, "\n", { plain = true })
  if lines[#lines] == "" then
    lines[#lines] = nil
  end
  local st = scan.scan(lines)
  local last = st.messages[#st.messages]
  if not (last and last.role == "You" and last.last_row == last.row) then
    if #lines > 0 and lines[#lines]:find("%S") then
      lines[#lines + 1] = ""
    end
    lines[#lines + 1] = "@You:"
    last = { row = #lines - 1 }
  end
  if #lines == last.row + 1 then
    lines[#lines + 1] = ""
  end
  return lines, last.row + 2
end

--- The side chat's window in this tab page, if any.
function M.side_window()
  for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
    if vim.w[win][SIDE] then
      return win
    end
  end
  return nil
end

--- The side window's width in columns.
local function side_width()
  local _, new_chat = options()
  local width = new_chat.width
  if type(width) == "string" then
    width = math.floor(vim.o.columns * tonumber(width:sub(1, -2)) / 100)
  end
  return math.max(math.min(width, vim.o.columns - 10), 20)
end

--- Show `buf` in a window laid out per `layout` and make that window current.
function M.show(buf, layout)
  if layout == "current" then
    -- `:hide`: the buffer the window showed stays loaded, unsaved changes and all.
    vim.cmd("hide buffer " .. buf)
  elseif layout == "tab" then
    vim.cmd("tab split")
    vim.api.nvim_win_set_buf(0, buf)
  elseif layout == "side" then
    local win = M.side_window()
    if win then
      vim.api.nvim_set_current_win(win)
      vim.api.nvim_win_set_buf(win, buf)
    else
      win = vim.api.nvim_open_win(buf, true, { split = "right", win = -1, width = side_width() })
      vim.w[win][SIDE] = true
      vim.wo[win].winfixwidth = true
    end
  else
    local split = layout == "vsplit" and (vim.o.splitright and "right" or "left")
      or (vim.o.splitbelow and "below" or "above")
    vim.api.nvim_open_win(buf, true, { split = split, win = 0 })
  end
end

--- Open a new chat (`name`: its file's name, else a dated one) per `layout` (default
--- `ui.new_chat.layout`), holding the template; the cursor on its empty `@You:`. Returns the
--- buffer.
function M.new(name, layout)
  local lines, cursor = M.template_lines(M.template())
  local file = M.free_path(M.directory(), name)
  local buf = vim.fn.bufadd(file)
  M.show(buf, layout or select(2, options()).layout)
  -- The template is not an edit of yours: no undo step, and the buffer stays unmodified until
  -- you type (a chat opened by mistake goes without a question, and leaves no file).
  local undolevels = vim.bo[buf].undolevels
  vim.bo[buf].undolevels = -1
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].undolevels = undolevels
  vim.bo[buf].modified = false
  vim.api.nvim_win_set_cursor(0, { cursor, 0 })
  M.focused(buf)
  return buf
end

--- `:Flemma toggle`: hide the side chat's window in this tab, or show the last used chat there
--- (a new chat when there is none).
function M.toggle()
  local win = M.side_window()
  if win then
    if #vim.api.nvim_tabpage_list_wins(0) == 1 then
      error("the side chat is the only window of this tab page", 0)
    end
    -- Forced: the chat is hidden, never unloaded, whatever it holds that is not written.
    vim.api.nvim_win_close(win, true)
    return
  end
  local buf = M.last()
  if buf then
    M.show(buf, "side")
  else
    M.new(nil, "side")
  end
end

return M
