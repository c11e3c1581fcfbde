--- flemma.complete.blink: Flemma's completion as a blink.cmp source (docs/completion.md). blink.cmp
--- loads it by module name (`sources.providers.flemma = { module = "flemma.complete.blink" }`;
--- flemma.complete.plugins adds it for chat buffers when blink.cmp is installed) and calls
--- `new(opts)`, then `enabled()`, `get_trigger_characters()` and `get_completions(ctx, callback)`.
local complete = require("flemma.complete")

local Source = {}
Source.__index = Source

function Source.new(opts)
  return setmetatable({ opts = opts or {} }, Source)
end

--- Only in chat buffers.
function Source.enabled(_)
  return vim.bo.filetype == "chat"
end

function Source.get_trigger_characters(_)
  return complete.TRIGGERS
end

--- `ctx.bufnr`, `ctx.cursor` (`{row (1-based), col (0-based bytes)}`); the items go to
--- `callback({ items, is_incomplete_forward, is_incomplete_backward })`.
function Source.get_completions(_, ctx, callback)
  local bufnr = ctx.bufnr or vim.api.nvim_get_current_buf()
  local cursor = ctx.cursor or vim.api.nvim_win_get_cursor(0)
  complete.lsp_request(bufnr, cursor, function(items, incomplete)
    callback({ items = items, is_incomplete_forward = incomplete, is_incomplete_backward = true })
  end)
end

return Source
