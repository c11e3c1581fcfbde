-- `npm run demo`: Neovim with Flemma loaded from this checkout and nothing else.
local root = vim.env.FLEMMA_ROOT
vim.opt.runtimepath:prepend(root)
vim.o.termguicolors = true
vim.o.wrap = true
vim.o.linebreak = true
vim.o.number = true
vim.o.cursorline = true

-- The demo logs to a file of its own (the one `npm run demo` names, else one in Neovim's own
-- temporary directory), never to the user's real log (stdpath("log")/flemma.log).
local demo_log = vim.env.FLEMMA_DEMO_LOG
if demo_log == nil or demo_log == "" then
  demo_log = vim.fs.joinpath(vim.fn.fnamemodify(vim.fn.tempname(), ":h"), "flemma-demo.log")
end

require("flemma").setup({
  provider = vim.env.FLEMMA_DEMO_PROVIDER or "demo",
  logging = { path = demo_log },
})

vim.api.nvim_create_autocmd("VimEnter", {
  once = true,
  callback = function()
    local provider = vim.env.FLEMMA_DEMO_PROVIDER or "demo"
    local what = provider == "demo" and "offline demo provider" or provider
    vim.api.nvim_win_set_cursor(0, { vim.api.nvim_buf_line_count(0), 0 })
    -- Deferred and short: a message wider than the screen would stop at a hit-enter prompt.
    vim.defer_fn(function()
      vim.api.nvim_echo(
        { { "Flemma demo (" .. what .. "): <C-]> sends, <M-CR> runs a tool, :qa! quits", "MoreMsg" } },
        false,
        {}
      )
    end, 50)
  end,
})
