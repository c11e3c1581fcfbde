--- flemma.complete.cmp: Flemma's completion as an nvim-cmp source (docs/completion.md), registered
--- with `require("cmp").register_source("flemma", require("flemma.complete.cmp").new())`
--- (flemma.complete.plugins does it, and adds the source for chat buffers, when nvim-cmp is
--- installed). nvim-cmp calls `is_available()`, `get_trigger_characters()`,
--- `get_keyword_pattern()` and `complete(params, callback)`.
local complete = require("flemma.complete")

local Source = {}
Source.__index = Source

function Source.new()
  return setmetatable({}, Source)
end

--- Only in chat buffers.
function Source.is_available(_)
  return vim.bo.filetype == "chat"
end

function Source.get_trigger_characters(_)
  return complete.TRIGGERS
end

--- A reference, a path or an option name as one word (the items replace from their own start).
function Source.get_keyword_pattern(_)
  return [[\%(@\|/\)\?[^[:blank:]"']*]]
end

--- `params.context.bufnr` and `params.context.cursor` (`row` 1-based, `col` 1-based bytes); the
--- items go to `callback({ items, isIncomplete })`.
function Source.complete(_, params, callback)
  local context = params and params.context or {}
  local bufnr = context.bufnr or vim.api.nvim_get_current_buf()
  local cursor = context.cursor and { context.cursor.row, context.cursor.col - 1 } or vim.api.nvim_win_get_cursor(0)
  complete.lsp_request(bufnr, cursor, function(items, incomplete)
    callback({ items = items, isIncomplete = incomplete })
  end)
end

return Source
