--- flemma.complete: completion in chat buffers (docs/completion.md). Where the cursor is comes
--- from the one line scan (flemma.ui.scan, through flemma.ui's kept structure): the frontmatter,
--- a message (its role), the start of a line. What to offer is asked of the host without waiting
--- (`complete:items`, a `call`): a reference's paths and MCP resources, a frontmatter's option
--- names and values, tool and preset names. Slash commands come from `flemma.slash` when it
--- exists. The front ends: `'omnifunc'` (set on every chat buffer), a popup that opens on `@` and
--- on `/` while typing when no completion plugin is there (`completion.auto`), and the sources of
--- blink.cmp and nvim-cmp (one object for both: flemma.complete.source).
local lazy = require("flemma.util.lazy")
local config = lazy.require("flemma.config")
local host = lazy.require("flemma.host")
local ui = lazy.require("flemma.ui")
local scan = lazy.require("flemma.ui.scan")
local M = {}

--- Slash commands' module: built beside this one, and optional (nothing is offered without it).
local SLASH = "flemma.slash"

local H = {
  --- The number of the last request of each buffer: an older answer is dropped.
  seq = {},
  --- 'completeopt' as it was before the popup of `completion.auto` changed it.
  saved_completeopt = nil,
}

--- The chat file's directory (the working directory for a buffer without a name).
local function chat_dir(bufnr)
  local name = vim.api.nvim_buf_get_name(bufnr)
  if name == "" then
    return vim.fn.getcwd()
  end
  return vim.fn.fnamemodify(name, ":p:h")
end

--- The reference being typed before the cursor (`@` not right after an ASCII letter or digit).
local function in_reference(before)
  local at = before:match("()@%S*$")
  return at ~= nil and (at == 1 or before:sub(at - 1, at - 1):match("[%w]") == nil)
end

--- Whether the text before the cursor is a slash command being typed: its name, or its
--- arguments after the name and a space.
local function slash_line(before)
  return before:match("^/%S*$") ~= nil or before:match("^/%a[%w_%-]*:?[%w_%-]*[ \t]") ~= nil
end

--- Where the cursor is: `{ where = "frontmatter" | "reference" | "slash", … }`, or nil.
---@param bufnr integer
---@param row integer 0-based
---@param col integer 0-based byte column of the cursor
---@param line string the cursor's line
function M.context(bufnr, row, col, line)
  local structure = ui.read(bufnr)
  local before = line:sub(1, col)
  local fm = structure.frontmatter
  if fm and row > fm.row and row < fm.end_row then
    return {
      where = "frontmatter",
      lang = fm.lang,
      lines = vim.api.nvim_buf_get_lines(bufnr, fm.row + 1, row, false),
      line = line,
      col = col,
    }
  end
  local index = scan.message_at(structure, row)
  local message = index and structure.messages[index]
  -- `@mcp:` alone on its line reads as a message marker until more is typed.
  local marker = message and message.row == row and before:sub(1, 5) ~= "@mcp:"
  -- Inside a block (a tool call, a result, a thinking block) nothing completes; a slash
  -- command's line is a block of its own, and completes.
  local block = scan.block_at(structure, row)
  if not message or marker or (block and block.kind ~= "slash") then
    return nil
  end
  if message.role == "You" and slash_line(before) then
    return { where = "slash", line = line, col = col }
  end
  if in_reference(before) then
    return { where = "reference", line = line, col = col, dir = chat_dir(bufnr) }
  end
  return nil
end

--- Slash commands from `flemma.slash` when it exists: its items and start column, or none.
local function slash_items(bufnr, ctx)
  local ok, slash = pcall(require, SLASH)
  if not ok or type(slash) ~= "table" or type(slash.complete) ~= "function" then
    return {}, ctx.col
  end
  local called, items, start = pcall(slash.complete, { bufnr = bufnr, line = ctx.line, col = ctx.col })
  if not called or type(items) ~= "table" then
    return {}, ctx.col
  end
  return items, start or 0
end

--- Ask for the items at the cursor of the current window on `bufnr`; `callback(items, start,
--- incomplete)` runs later (never inside this call for the host's sources), and not at all when
--- a newer request of the buffer was made meanwhile or there is nothing to complete here.
---@param bufnr integer
---@param callback fun(items: table[], start: integer, incomplete: boolean)
---@param cursor? integer[] `{row (1-based), col (0-based bytes)}`; the window's cursor by default
---@return boolean asked whether the cursor is somewhere completion answers
function M.request(bufnr, callback, cursor)
  cursor = cursor or vim.api.nvim_win_get_cursor(0)
  local row, col = cursor[1] - 1, cursor[2]
  local line = vim.api.nvim_buf_get_lines(bufnr, row, row + 1, false)[1] or ""
  local ctx = M.context(bufnr, row, col, line)
  if not ctx then
    return false
  end
  local seq = (H.seq[bufnr] or 0) + 1
  H.seq[bufnr] = seq
  if ctx.where == "slash" then
    local items, start = slash_items(bufnr, ctx)
    vim.schedule(function()
      if H.seq[bufnr] == seq then
        -- Asked again at each key: `flemma.slash` narrows by what is typed (the short and the
        -- namespaced names do not share a prefix, so Vim's own narrowing would keep the wrong ones).
        callback(items, start, true)
      end
    end)
    return true
  end
  host.call("complete:items", ctx, function(err, answer)
    if err or type(answer) ~= "table" or H.seq[bufnr] ~= seq then
      return
    end
    callback(answer.items or {}, answer.start or col, answer.incomplete == true)
  end)
  return true
end

--- Show `items` in Vim's popup from byte column `start`, if the cursor is still where it was.
--- `auto`: the popup while typing, with its own 'completeopt' (yours back once it closes).
local function show(bufnr, row, items, start, auto)
  if vim.api.nvim_get_current_buf() ~= bufnr or not vim.fn.mode():match("^i") then
    return
  end
  if vim.api.nvim_win_get_cursor(0)[1] ~= row then
    return
  end
  for _, item in ipairs(items) do
    item.icase = 1
    item.dup = 1
  end
  if auto then
    H.saved_completeopt = H.saved_completeopt or vim.o.completeopt
    vim.o.completeopt = "menuone,noselect"
  end
  -- complete() ends the completion before it (CompleteDone): not the end of this popup.
  H.showing = true
  pcall(vim.fn.complete, start + 1, items)
  H.showing = false
end

--- `'omnifunc'` of chat buffers: asks, returns -3 at once, and shows the answer when it comes.
function M.omnifunc(findstart, _)
  if findstart ~= 1 then
    return {}
  end
  local bufnr = vim.api.nvim_get_current_buf()
  local row = vim.api.nvim_win_get_cursor(0)[1]
  M.request(bufnr, function(items, start)
    show(bufnr, row, items, start)
  end)
  return -3
end

--- Whether a completion plugin (blink.cmp, nvim-cmp) is loaded: it shows Flemma's items itself.
local function plugin_loaded()
  return package.loaded["blink.cmp"] ~= nil or package.loaded["cmp"] ~= nil
end

local function auto_enabled()
  local ok, cfg = pcall(config.get)
  local section = ok and type(cfg) == "table" and cfg.completion or nil
  return not (type(section) == "table" and section.auto == false)
end

local function restore_completeopt()
  if H.saved_completeopt then
    vim.o.completeopt = H.saved_completeopt
    H.saved_completeopt = nil
  end
end

--- While typing (`completion.auto`): after `@` at a word start, or `/` at the start of a line in
--- a `@You:` message, ask and show the popup; every key typed after asks again. Nothing here
--- waits: the question goes out and the popup comes with its answer.
local function on_typed(bufnr)
  if plugin_loaded() or not auto_enabled() then
    return
  end
  local cursor = vim.api.nvim_win_get_cursor(0)
  local before = vim.api.nvim_get_current_line():sub(1, cursor[2])
  if not (in_reference(before) or slash_line(before)) then
    return
  end
  M.request(bufnr, function(items, start)
    -- With nothing to offer, our popup (if open) goes: an empty list closes it; another
    -- popup is left alone.
    if #items > 0 or (vim.fn.pumvisible() == 1 and H.saved_completeopt) then
      show(bufnr, cursor[1], items, start, true)
    end
  end, cursor)
end

--- Set up completion in a chat buffer: `'omnifunc'` and, when on, the popup while typing.
---@param bufnr integer
function M.setup_buffer(bufnr)
  vim.bo[bufnr].omnifunc = "v:lua.require'flemma.complete'.omnifunc"
  local group = vim.api.nvim_create_augroup("flemma.complete." .. bufnr, { clear = true })
  vim.api.nvim_create_autocmd({ "TextChangedI", "TextChangedP" }, {
    group = group,
    buffer = bufnr,
    desc = "Flemma: the completion popup on @ and /",
    callback = function()
      on_typed(bufnr)
    end,
  })
  vim.api.nvim_create_autocmd({ "CompleteDone", "InsertLeave" }, {
    group = group,
    buffer = bufnr,
    desc = "Flemma: 'completeopt' back as it was; completing goes on into a directory",
    callback = function(ev)
      if H.showing then
        return
      end
      restore_completeopt()
      local word = ev.event == "CompleteDone" and vim.v.completed_item.word or nil
      if type(word) == "string" and word:sub(-1) == "/" then
        vim.schedule(function()
          if vim.api.nvim_get_current_buf() == bufnr and vim.fn.mode():match("^i") then
            on_typed(bufnr)
          end
        end)
      end
    end,
  })
  vim.api.nvim_create_autocmd("BufWipeout", {
    group = group,
    buffer = bufnr,
    once = true,
    callback = function()
      H.seq[bufnr] = nil
      pcall(vim.api.nvim_del_augroup_by_id, group)
    end,
  })
end

--- The LSP kind (`vim.lsp.protocol.CompletionItemKind`) of an item's kind, for the plugins.
local KINDS = {
  dir = "Folder",
  file = "File",
  mcp = "Reference",
  option = "Property",
  value = "EnumMember",
  tool = "Function",
  preset = "Constant",
}

--- An item as an LSP CompletionItem replacing from `start` to the cursor on row `row` (0-based).
---@param item table a Vim complete-item
---@param row integer
---@param start integer
---@param col integer
function M.lsp_item(item, row, start, col)
  local kinds = vim.lsp.protocol.CompletionItemKind
  local range = { start = { line = row, character = start }, ["end"] = { line = row, character = col } }
  return {
    label = item.abbr or item.word,
    filterText = item.word,
    kind = kinds[KINDS[item.kind] or "Keyword"] or kinds.Text,
    detail = item.menu,
    documentation = item.info,
    textEdit = { newText = item.word, range = range },
  }
end

--- What the plugins' sources ask: the items as LSP items, through `callback(items, incomplete)`.
---@param bufnr integer
---@param cursor integer[] `{row (1-based), col (0-based bytes)}`
---@param callback fun(items: table[], incomplete: boolean)
function M.lsp_request(bufnr, cursor, callback)
  local asked = M.request(bufnr, function(items, start, incomplete)
    local out = {}
    for i, item in ipairs(items) do
      out[i] = M.lsp_item(item, cursor[1] - 1, start, cursor[2])
    end
    callback(out, incomplete)
  end, cursor)
  if not asked then
    callback({}, false)
  end
end

--- The characters after which the plugins should ask.
M.TRIGGERS = { "@", "/", ".", ":", '"', "'" }

return M
