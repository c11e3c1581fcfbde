--- flemma.picker: a list shown in the picker the user has (docs/picker.md): snacks.picker,
--- telescope or fzf-lua when installed (in that order, or the one `ui.picker` names), else
--- `vim.ui.select`. Each adapter uses its plugin's documented API only. The items are the rows
--- `:Flemma chats` got from the host (`row.line` is what is shown, `row.path` what opens); the
--- preview comes asynchronously (`opts.preview(row, done)`) and is drawn only while its row is
--- still the one shown.
local lazy = require("flemma.util.lazy")
local config = lazy.require("flemma.config")
local notify = lazy.require("flemma.notify")
local M = {}

local H = {}

---@class flemma.picker.Opts
---@field title string
---@field preview fun(row: table, done: fun(lines: string[]))
---@field open fun(path: string)

--- The preview of `row`, drawn by `draw(lines)` unless another row was shown meanwhile.
--- Returns the function that asks for it; `state.current` is the row shown last.
function H.previewer(opts)
  local state = { cache = {} }
  return function(row, draw)
    state.current = row
    local cached = state.cache[row.path]
    if cached then
      draw(cached)
      return
    end
    draw({ "…" })
    opts.preview(row, function(lines)
      state.cache[row.path] = lines
      if state.current == row then
        draw(lines)
      end
    end)
  end
end

-- The preview's filetype: Markdown, which a chat's text is close to. (Not `chat`: that would make
-- the preview's buffer a chat the host follows.)
local PREVIEW_FT = "markdown"

--- Lines into the preview's buffer `buf` (when it is still there).
function H.fill(buf, lines)
  if not vim.api.nvim_buf_is_valid(buf) then
    return
  end
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].filetype = PREVIEW_FT
end

H.adapters = {}

--- snacks.picker: `Snacks.picker.pick({ items, format, preview, confirm })`.
function H.adapters.snacks(rows, opts)
  local snacks = require("snacks")
  local preview = H.previewer(opts)
  local items = {}
  for i, row in ipairs(rows) do
    items[i] = { idx = i, text = row.line, row = row }
  end
  snacks.picker.pick({
    source = "flemma_chats",
    title = opts.title,
    items = items,
    format = function(item)
      return { { item.text } }
    end,
    preview = function(ctx)
      preview(ctx.item.row, function(lines)
        ctx.preview:reset()
        ctx.preview:set_lines(lines)
        ctx.preview:highlight({ ft = PREVIEW_FT })
      end)
    end,
    confirm = function(picker, item)
      picker:close()
      if item then
        opts.open(item.row.path)
      end
    end,
  })
end

--- telescope: `pickers.new(opts, { finder, sorter, previewer, attach_mappings }):find()`.
function H.adapters.telescope(rows, opts)
  local pickers = require("telescope.pickers")
  local finders = require("telescope.finders")
  local previewers = require("telescope.previewers")
  local actions = require("telescope.actions")
  local action_state = require("telescope.actions.state")
  local conf = require("telescope.config").values
  local preview = H.previewer(opts)
  local topts = {}
  pickers
    .new(topts, {
      prompt_title = opts.title,
      finder = finders.new_table({
        results = rows,
        entry_maker = function(row)
          return { value = row, display = row.line, ordinal = row.line }
        end,
      }),
      sorter = conf.generic_sorter(topts),
      previewer = previewers.new_buffer_previewer({
        title = "Last exchange",
        define_preview = function(self, entry)
          local buf = self.state.bufnr
          preview(entry.value, function(lines)
            H.fill(buf, lines)
          end)
        end,
      }),
      attach_mappings = function(prompt_bufnr)
        actions.select_default:replace(function()
          local entry = action_state.get_selected_entry()
          actions.close(prompt_bufnr)
          if entry then
            opts.open(entry.value.path)
          end
        end)
        return true
      end,
    })
    :find()
end

--- fzf-lua: `fzf_exec(lines, { previewer, actions })`, the preview a builtin previewer's buffer.
H.adapters["fzf-lua"] = function(rows, opts)
  local fzf = require("fzf-lua")
  local builtin = require("fzf-lua.previewer.builtin")
  local preview = H.previewer(opts)
  local by_line = {}
  local lines = {}
  for i, row in ipairs(rows) do
    by_line[row.line] = row
    lines[i] = row.line
  end
  local Previewer = builtin.base:extend()
  function Previewer:new(o, popts, fzf_win)
    Previewer.super.new(self, o, popts, fzf_win)
    setmetatable(self, Previewer)
    return self
  end
  function Previewer:populate_preview_buf(entry)
    local row = by_line[entry]
    if not row then
      return
    end
    local buf = self:get_tmp_buffer()
    self:set_preview_buf(buf)
    preview(row, function(text)
      H.fill(buf, text)
    end)
  end
  fzf.fzf_exec(lines, {
    prompt = opts.title .. "> ",
    previewer = Previewer,
    actions = {
      ["default"] = function(selected)
        local row = selected and by_line[selected[1]]
        if row then
          opts.open(row.path)
        end
      end,
    },
  })
end

--- `vim.ui.select`: no preview.
function H.adapters.select(rows, opts)
  vim.ui.select(rows, {
    prompt = opts.title,
    kind = "flemma_chats",
    format_item = function(row)
      return row.line
    end,
  }, function(row)
    if row then
      opts.open(row.path)
    end
  end)
end

--- The module each plugin is found by.
local MODULES = { snacks = "snacks", telescope = "telescope", ["fzf-lua"] = "fzf-lua" }

function H.installed(name)
  if name == "select" then
    return true
  end
  local ok, mod = pcall(require, MODULES[name])
  if not ok then
    return false
  end
  return name ~= "snacks" or (type(mod) == "table" and mod.picker ~= nil)
end

--- The front end `ui.picker` names (`auto`: the first installed), falling back to `vim.ui.select`.
function M.choose()
  local wanted = (config.get().ui or {}).picker or "auto"
  if wanted ~= "auto" then
    if H.installed(wanted) then
      return wanted
    end
    notify.warn(string.format("ui.picker: %s is not installed; using vim.ui.select", wanted))
    return "select"
  end
  for _, name in ipairs({ "snacks", "telescope", "fzf-lua" }) do
    if H.installed(name) then
      return name
    end
  end
  return "select"
end

--- Show `rows` in the picker.
---@param rows table[]
---@param opts flemma.picker.Opts
function M.show(rows, opts)
  H.adapters[M.choose()](rows, opts)
end

return M
