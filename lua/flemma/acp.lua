--- flemma.acp: what Neovim does for the chats' ACP agents (docs/agents.md): asks the user about a
--- permission request the approval chain left to them, and sends the answer to the host.
local lazy = require("flemma.util.lazy")
local host = lazy.require("flemma.host")

local M = {}

--- The choices offered, in order, and the answer each sends (`acp:answer`).
M.CHOICES = {
  { label = "Allow once", answer = "allow" },
  { label = "Always allow (this session)", answer = "allow_always" },
  { label = "Reject", answer = "reject" },
}

--- `acp.permission {bufnr, id, message}`: ask with |vim.ui.select()|; no choice rejects.
function M.permission(params)
  local labels = vim.tbl_map(function(choice)
    return choice.label
  end, M.CHOICES)
  -- Scheduled: a picker plugin may open windows, which is better not done inside an RPC call.
  vim.schedule(function()
    vim.ui.select(labels, { prompt = "Flemma: " .. params.message }, function(_, index)
      local choice = index and M.CHOICES[index]
      host.notify("acp:answer", {
        bufnr = params.bufnr,
        id = params.id,
        answer = choice and choice.answer or "reject",
      })
    end)
  end)
end

return M
