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

-- The defaults, as a new user has them (bash runs in the sandbox without asking; the script checks
-- that bubblewrap is there), except that:
require("flemma").setup({
  -- the bar stays until the next reply replaces it, so the script can wait for it at leisure.
  ui = { usage = { timeout = 0 } },
})
