--- flemma.review.diff: a pending `write` or `edit` in Neovim's diff mode, in a tab of its own.
--- Left: the file as it is now (read-only). Right: the file as the call would leave it, an editable
--- scratch buffer named `flemma://proposed/<path>`. From the tab the user approves (what the right
--- side shows is what runs; the host rewrites the call in the chat to match), rejects (with an
--- optional reason), or closes the tab (the call stays pending). The host reads the file and
--- decides; this module only draws and sends (docs/tools.md, "Review").
local lazy = require("flemma.util.lazy")
local turn = lazy.require("flemma.chat.turn")
local guard = lazy.require("flemma.chat.guard")
local config = lazy.require("flemma.config")
local host = lazy.require("flemma.host")
local flemma_notify = lazy.require("flemma.notify")
local M = {}

--- What the keys of a deciding diff tab do (their `desc`, and `:Flemma keys`).
M.APPROVE = "approve what the proposed side shows"
M.REJECT = "reject the call (asks for a reason)"

---@class flemma.review.DiffSpec
---@field bufnr integer the chat buffer
---@field tool_id string
---@field name string `write` or `edit`
---@field path string the path as the call names it
---@field abs? string where it leads
---@field exists boolean false for a file the call would create
---@field before string the file now
---@field after string the file as the call would leave it
---@field notice? string|vim.NIL why to look twice (the file changed on disk)
---@field view_only? boolean a call that ran: `before` is what the file held before it, `after` the file now
---@field answer? fun(answer: "allow"|"reject") an agent's `edit` permission request (flemma.acp): approve allows it once, reject rejects it; the proposed side is read-only (the agent writes what it proposed)

---@class flemma.review.DiffOptions
---@field decide? boolean false: a view only (both sides read-only, no approve/reject); default true

local H = {
  --- Diff tabs by their proposed buffer: the spec, the left buffer, the options.
  views = {}, ---@type table<integer, { spec: flemma.review.DiffSpec, left: integer, decide: boolean }>
}

local function notify()
  return flemma_notify
end

--- The lines of `text` and whether it ends with a line break.
---@param text string
---@return string[] lines, boolean eol
local function lines_of(text)
  if text == "" then
    return { "" }, true
  end
  local lines = vim.split(text, "\n", { plain = true })
  local eol = lines[#lines] == ""
  if eol then
    table.remove(lines)
  end
  return lines, eol
end

--- What a buffer holds, as file text (the inverse of `lines_of`).
---@param buf integer
---@return string
local function text_of(buf)
  local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  if #lines == 1 and lines[1] == "" then
    return ""
  end
  return table.concat(lines, "\n") .. (vim.bo[buf].eol and "\n" or "")
end

---@param buf integer
---@param text string
local function fill(buf, text)
  local lines, eol = lines_of(text)
  local modifiable = vim.bo[buf].modifiable
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].eol = eol
  vim.bo[buf].fixeol = false
  vim.bo[buf].modifiable = modifiable
end

--- A scratch buffer named `name` (another buffer already named so is replaced).
---@param name string
---@return integer
local function scratch(name)
  for _, old in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_get_name(old) == name then
      pcall(vim.api.nvim_buf_delete, old, { force = true })
    end
  end
  local buf = vim.api.nvim_create_buf(false, true)
  vim.bo[buf].buftype = "nofile"
  vim.bo[buf].bufhidden = "wipe"
  vim.bo[buf].swapfile = false
  pcall(vim.api.nvim_buf_set_name, buf, name)
  return buf
end

--- The keys of the diff tab (`keymaps.diff`), `false` or "" meaning none.
---@return { approve: string|false, reject: string|false }
--- The keys of a diff tab that decides (`keymaps.diff`): `{ approve, reject }`, each a key or
--- false.
function M.keys()
  local ok, cfg = pcall(function()
    return config.get().keymaps
  end)
  if not ok or type(cfg) ~= "table" or cfg.enabled == false then
    return { approve = false, reject = false }
  end
  local diff = type(cfg.diff) == "table" and cfg.diff or {}
  local approve = diff.approve == nil and "ga" or diff.approve
  local reject = diff.reject == nil and "gr" or diff.reject
  return { approve = approve, reject = reject }
end

local function escape(text)
  return (text:gsub("%%", "%%%%"))
end

--- The winbars of both sides (the notice, when there is one, on the left).
---@param view { spec: flemma.review.DiffSpec, left: integer, decide: boolean }
---@param right integer
local function winbars(view, right)
  local spec = view.spec
  local notice = type(spec.notice) == "string" and spec.notice or nil
  local left_label, right_label = "Now: ", "Proposed: "
  if spec.view_only then
    left_label, right_label = "Before: ", "Now: "
  end
  local left_bar = left_label .. escape(spec.path) .. (spec.exists and "" or " (new file)")
  if notice then
    left_bar = "%#WarningMsg#" .. escape(notice) .. "%* " .. left_bar
  end
  local right_bar = right_label .. escape(spec.path)
  if view.decide then
    local k = M.keys()
    local parts = {}
    if k.approve then
      parts[#parts + 1] = escape(k.approve) .. " approve"
    end
    if k.reject then
      parts[#parts + 1] = escape(k.reject) .. " reject"
    end
    parts[#parts + 1] = ":tabclose keeps it pending"
    right_bar = right_bar .. "  —  " .. table.concat(parts, " · ")
  end
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    local buf = vim.api.nvim_win_get_buf(win)
    if buf == view.left then
      vim.wo[win].winbar = left_bar
    elseif buf == right then
      vim.wo[win].winbar = right_bar
    end
  end
end

--- The tab showing `buf`, if any.
---@param buf integer
---@return integer|nil
local function tab_of(buf)
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    if vim.api.nvim_win_get_buf(win) == buf then
      return vim.api.nvim_win_get_tabpage(win)
    end
  end
  return nil
end

--- Close the diff tab of `right` (its buffers go with it).
---@param right integer
local function close(right)
  local view = H.views[right]
  H.views[right] = nil
  local tab = tab_of(right)
  if tab and #vim.api.nvim_list_tabpages() > 1 then
    pcall(vim.cmd, "tabclose " .. vim.api.nvim_tabpage_get_number(tab))
  end
  for _, buf in ipairs({ right, view and view.left }) do
    if buf and vim.api.nvim_buf_is_valid(buf) then
      pcall(vim.api.nvim_buf_delete, buf, { force = true })
    end
  end
end

--- The proposed buffer of the diff tab `buf` belongs to (either side), if any.
---@param buf? integer
---@return integer|nil
function M.owner(buf)
  buf = (buf == nil or buf == 0) and vim.api.nvim_get_current_buf() or buf
  if H.views[buf] then
    return buf
  end
  for right, view in pairs(H.views) do
    if view.left == buf then
      return right
    end
  end
  return nil
end

--- Open the diff of `spec` in a new tab. Returns the proposed (right) buffer.
---@param spec flemma.review.DiffSpec
---@param opts? flemma.review.DiffOptions
---@return integer
function M.open(spec, opts)
  local decide = not (opts and opts.decide == false)
  -- The same call shown again replaces its earlier tab.
  for right, view in pairs(H.views) do
    if view.spec.bufnr == spec.bufnr and view.spec.tool_id == spec.tool_id then
      close(right)
    end
  end
  local ft = vim.filetype.match({ filename = spec.abs or spec.path }) or ""
  -- A call that ran is shown as what the file held before it, beside the file now.
  local left_name, right_name = "current", "proposed"
  if spec.view_only then
    left_name, right_name = "before", "now"
  end
  local left = scratch("flemma://" .. left_name .. "/" .. spec.path)
  fill(left, spec.before)
  vim.bo[left].modifiable = false
  vim.bo[left].readonly = true
  local right = scratch("flemma://" .. right_name .. "/" .. spec.path)
  fill(right, spec.after)
  vim.bo[right].modifiable = decide and not spec.answer
  vim.bo[right].readonly = not decide or spec.answer ~= nil
  for _, buf in ipairs({ left, right }) do
    if ft ~= "" then
      vim.bo[buf].filetype = ft
    end
  end

  vim.cmd("tabnew")
  local placeholder = vim.api.nvim_get_current_buf()
  local left_win = vim.api.nvim_get_current_win()
  vim.api.nvim_win_set_buf(left_win, left)
  if vim.api.nvim_buf_is_valid(placeholder) and placeholder ~= left then
    pcall(vim.api.nvim_buf_delete, placeholder, { force = true })
  end
  vim.cmd("diffthis")
  vim.cmd("rightbelow vsplit")
  local right_win = vim.api.nvim_get_current_win()
  vim.api.nvim_win_set_buf(right_win, right)
  vim.cmd("diffthis")

  local view = { spec = spec, left = left, decide = decide }
  H.views[right] = view
  winbars(view, right)
  vim.api.nvim_create_autocmd("BufWipeout", {
    buffer = right,
    once = true,
    callback = function()
      H.views[right] = nil
    end,
  })

  if decide then
    local k = M.keys()
    -- `nowait`: `gr` is the start of Neovim's own `grn`, `grr`, `gra`, `gri` (0.11+), and `ga` of
    -- common align plugins' maps; it acts at once instead of after 'timeoutlen'.
    for _, buf in ipairs({ left, right }) do
      if k.approve then
        vim.keymap.set("n", k.approve, function()
          M.approve(buf)
        end, { buffer = buf, silent = true, nowait = true, desc = "Flemma: " .. M.APPROVE })
      end
      if k.reject then
        vim.keymap.set("n", k.reject, function()
          M.reject(buf)
        end, { buffer = buf, silent = true, nowait = true, desc = "Flemma: " .. M.REJECT })
      end
    end
  end
  return right
end

--- Ask the host for the diff of the pending call under the cursor of the chat buffer, and open it.
---@param bufnr? integer
---@param row? integer 0-based
function M.request(bufnr, row)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  row = row or (vim.api.nvim_win_get_cursor(0)[1] - 1)
  host.call("tool:diff", { bufnr = bufnr, row = row }, function(err, spec)
    if err then
      notify().warn("tool:diff: " .. tostring(err))
    elseif type(spec) == "table" then
      M.open(spec, { decide = not spec.view_only })
    end
  end)
end

--- Approve from the diff tab `buf` is in: what the proposed side shows is what runs.
---@param buf? integer
function M.approve(buf)
  local right = M.owner(buf)
  local view = right and H.views[right]
  if not view or not view.decide then
    notify().warn("Not in a Flemma diff")
    return
  end
  local spec = view.spec
  if spec.answer then
    -- An agent's request: answered while its reply streams (it writes nothing itself).
    spec.answer("allow")
    return close(right)
  end
  if guard.refuse(spec.bufnr) then
    return
  end
  local params = { bufnr = spec.bufnr, tool_id = spec.tool_id, before = spec.before, content = text_of(right) }
  -- The call runs as `<M-CR>` runs it; the host says when it is over (flemma.chat.turn).
  params.ticket = turn.ticket(spec.bufnr)
  host.call("tool:diff-approve", params, function(err, answer)
    if err then
      notify().warn("tool:diff: " .. tostring(err))
      return
    end
    if type(answer) == "table" and answer.status == "stale" and type(answer.diff) == "table" then
      -- The file changed meanwhile: the left side shows it as it is now, the user looks again.
      if H.views[right] then
        view.spec = vim.tbl_extend("force", spec, { before = answer.diff.before, notice = answer.diff.notice })
        fill(view.left, answer.diff.before)
        winbars(view, right)
        pcall(vim.cmd, "diffupdate")
      end
      notify().warn(tostring(answer.diff.notice))
      return
    end
    close(right)
  end)
end

--- Reject from the diff tab `buf` is in, asking for an optional reason (cancelling keeps the tab).
---@param buf? integer
function M.reject(buf)
  local right = M.owner(buf)
  local view = right and H.views[right]
  if not view or not view.decide then
    notify().warn("Not in a Flemma diff")
    return
  end
  local spec = view.spec
  if spec.answer then
    spec.answer("reject")
    return close(right)
  end
  if guard.refuse(spec.bufnr) then
    return
  end
  vim.ui.input({ prompt = "Reason for rejecting (optional): " }, function(reason)
    if reason == nil then
      return
    end
    local params = { bufnr = spec.bufnr, tool_id = spec.tool_id, reason = reason }
    params.ticket = turn.ticket(spec.bufnr)
    host.call("tool:diff-reject", params, function(err)
      if err then
        notify().warn("tool:diff: " .. tostring(err))
        return
      end
      close(right)
    end)
  end)
end

return M
