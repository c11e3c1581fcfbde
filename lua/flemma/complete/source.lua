--- flemma.complete.source: Flemma's completion as a source of blink.cmp and of nvim-cmp
--- (docs/completion.md), one object with both plugins' documented methods:
--- - blink.cmp loads it by module name (`sources.providers.flemma = { module =
---   "flemma.complete.source" }`) and calls `new(opts)`, then `enabled()`,
---   `get_trigger_characters()` and `get_completions(ctx, callback)`;
--- - nvim-cmp is given `new()` (`cmp.register_source("flemma", …)`) and calls `is_available()`,
---   `get_trigger_characters()`, `get_keyword_pattern()` and `complete(params, callback)`.
--- flemma.complete.plugins registers it with whichever is installed.
local complete = require("flemma.complete")

local Source = {}
Source.__index = Source

function Source.new()
  return setmetatable({}, Source)
end

--- Only in chat buffers (blink.cmp's `enabled`, nvim-cmp's `is_available`).
function Source.enabled(_)
  return vim.bo.filetype == "chat"
end
Source.is_available = Source.enabled

function Source.get_trigger_characters(_)
  return complete.TRIGGERS
end

--- nvim-cmp: a reference, a path or an option name as one word (the items replace from their
--- own start anyway).
function Source.get_keyword_pattern(_)
  return [[\%(@\|/\)\?[^[:blank:]"']*]]
end

--- blink.cmp: `ctx.bufnr`, `ctx.cursor` (`{row (1-based), col (0-based bytes)}`); the items go
--- to `callback({ items, is_incomplete_forward, is_incomplete_backward })`.
function Source.get_completions(_, ctx, callback)
  local cursor = ctx.cursor or vim.api.nvim_win_get_cursor(0)
  complete.lsp_request(ctx.bufnr or vim.api.nvim_get_current_buf(), cursor, function(items, more)
    callback({ items = items, is_incomplete_forward = more, is_incomplete_backward = true })
  end)
end

--- nvim-cmp: `params.context.bufnr` and `params.context.cursor` (`row` 1-based, `col` 1-based
--- bytes); the items go to `callback({ items, isIncomplete })`.
function Source.complete(_, params, callback)
  local context = params and params.context or {}
  local cursor = context.cursor and { context.cursor.row, context.cursor.col - 1 } or vim.api.nvim_win_get_cursor(0)
  complete.lsp_request(context.bufnr or vim.api.nvim_get_current_buf(), cursor, function(items, more)
    callback({ items = items, isIncomplete = more })
  end)
end

return Source
