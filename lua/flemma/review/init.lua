--- flemma.review: `:Flemma review` fills the quickfix list with the file changes of a turn's tool
--- calls (one entry per hunk, between what a file held before the call and what it holds now),
--- and `:Flemma tool:undo` from such an entry undoes its call. See docs/tools.md, "Undo and review".
---
--- The host answers what each call found in its files (the undo store); the hunks are computed
--- here with Neovim's own diff, on the files as they are now.
local scan = require("flemma.ui.scan")
local lazy = require("flemma.util.lazy")
local host = lazy.require("flemma.host")
local notify = lazy.require("flemma.notify")
local ui = lazy.require("flemma.ui")
local M = {}

M.TITLE = "Flemma review"

local H = {}

--- The whole content of `path`, or nil when it cannot be read (no file).
function H.read(path)
  local fd = io.open(path, "rb")
  if not fd then
    return nil
  end
  local text = fd:read("*a")
  fd:close()
  return text
end

--- Hunks between two texts: { start_a, count_a, start_b, count_b } each.
function H.hunks(a, b)
  local diff = (vim.text and vim.text.diff) or vim.diff
  return diff(a, b, { result_type = "indices" })
end

--- Quickfix items for the calls the host answered.
---@param chat integer the chat buffer
---@param calls table[]
---@return table[]
function M.items(chat, calls)
  local items = {}
  for _, call in ipairs(calls) do
    local prefix = string.format("%s (%s)", call.tool_id, call.name)
    local data = { flemma_chat = chat, flemma_tool_id = call.tool_id }
    local function add(path, lnum, text)
      items[#items + 1] = { filename = path, lnum = math.max(lnum, 1), text = prefix .. ": " .. text, user_data = data }
    end
    if not call.undone then
      for _, file in ipairs(call.files) do
        local skipped = file.skipped ~= nil and file.skipped ~= vim.NIL
        local before = (file.before ~= nil and file.before ~= vim.NIL) and file.before or nil
        local now = H.read(file.path)
        if skipped then
          add(file.path, 1, "changed; the content before was not kept (" .. file.skipped .. ")")
        elseif before == nil and now == nil then -- luacheck: ignore 542
          -- Created by the call and gone since: nothing to show.
        else
          local hunks = H.hunks(before or "", now or "")
          for _, hunk in ipairs(hunks) do
            local text = string.format("-%d +%d", hunk[2], hunk[4])
            if before == nil then
              text = text .. " (new file)"
            elseif now == nil then
              text = text .. " (file removed since)"
            end
            add(file.path, hunk[3], text)
          end
        end
      end
    end
  end
  return items
end

--- Files `git status` reports as changed during the turn: one entry each, marked as such.
function M.git_items(chat, paths)
  local items = {}
  for _, path in ipairs(paths or {}) do
    items[#items + 1] = {
      filename = path,
      lnum = 1,
      text = "changed during the turn (git status; by a command, exact change unknown)",
      user_data = { flemma_chat = chat },
    }
  end
  return items
end

--- `:Flemma review [all]`, or with a range: the messages it covers.
function M.run(args, ctx)
  local bufnr = vim.api.nvim_get_current_buf()
  if vim.bo[bufnr].filetype ~= "chat" then
    error("not a chat buffer")
  end
  local scope = "last"
  if args and args[1] == "all" then
    scope = "all"
  elseif args and args[1] ~= nil then
    error(string.format("expected 'all' or nothing, got '%s'", args[1]))
  elseif ctx and (ctx.range or 0) > 0 then
    scope = { first = ctx.line1, last = ctx.line2 }
  end
  host.call("chat:review", { bufnr = bufnr, scope = scope }, function(err, answer)
    if err then
      notify.warn("review: " .. tostring(err))
      return
    end
    local items = M.items(bufnr, answer.calls or {})
    vim.list_extend(items, M.git_items(bufnr, answer.git))
    vim.fn.setqflist({}, " ", { title = M.TITLE, items = items })
    if #items == 0 then
      notify.info("No file changes by tool calls to review", { key = "review" })
      return
    end
    vim.cmd("botright copen")
    -- The user reads the list from its top; the chat stays where it was.
    vim.cmd("wincmd p")
  end)
end

--- The chat and tool id of the review entry in use: the one under the cursor in the quickfix
--- window, else the current entry of a review list. Nil when there is none.
function M.current_entry()
  local info = vim.fn.getqflist({ title = 1, idx = 0 })
  if info.title ~= M.TITLE then
    return nil
  end
  local idx = vim.bo.buftype == "quickfix" and vim.fn.line(".") or info.idx
  local entry = vim.fn.getqflist({ idx = idx, items = 1 }).items[1]
  local data = entry and entry.user_data
  if type(data) ~= "table" or data.flemma_tool_id == nil then
    return nil
  end
  return data.flemma_chat, data.flemma_tool_id
end

--- The 0-based row of the result header of `tool_id` in `chat`, else of its tool use.
function M.call_row(chat, tool_id)
  local structure = ui.read(chat)
  local block = scan.tool_block(structure, "tool_result", tool_id) or scan.tool_block(structure, "tool_use", tool_id)
  return block and block.row or nil
end

return M
