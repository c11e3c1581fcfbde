-- `npm run screenshots`: the Neovim that scripts/screenshots.mjs drives in tmux. Flemma from this
-- checkout, a colorscheme that ships with Neovim, and nothing of the user's configuration.
local root = vim.env.FLEMMA_ROOT
vim.opt.runtimepath:prepend(root)
vim.o.termguicolors = true
vim.cmd.colorscheme(vim.env.FLEMMA_SHOTS_COLORSCHEME or "habamax")
vim.o.number = true
vim.o.wrap = true
vim.o.linebreak = true
vim.o.shortmess = vim.o.shortmess .. "I"

require("flemma").setup({
  -- The same on every machine: no sandbox (so no "no backend" warning where bubblewrap is
  -- missing), and bash asks before it runs.
  sandbox = { enabled = false },
  -- The bar stays until the next reply replaces it, so the script can wait for it at leisure.
  ui = { usage = { timeout = 0 } },
})
