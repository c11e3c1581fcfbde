--- flemma.sandbox: the runtime switch (`:Flemma sandbox:enable|disable`, which beats the
--- frontmatter and setup()) and the status report. The policy itself is applied by the host.
local M = {}

local H = { override = nil } ---@type { override: boolean|nil }

--- The runtime override: true, false, or nil when not set.
function M.override()
  return H.override
end

function M.enable()
  H.override = true
  require("flemma.notify").info("sandbox enabled for this session")
end

function M.disable()
  H.override = false
  require("flemma.notify").warn("sandbox disabled for this session: tools can write anywhere you can")
end

--- `:Flemma sandbox:status`: ask the host how the policy resolves for the current buffer.
function M.status(bufnr)
  bufnr = bufnr or vim.api.nvim_get_current_buf()
  require("flemma.host").call("sandbox:status", { bufnr = bufnr }, function(err, report)
    local notify = require("flemma.notify")
    if err then
      notify.warn("sandbox status: " .. tostring(err))
      return
    end
    notify.info(table.concat(report.lines or {}, "\n"))
  end)
end

return M
