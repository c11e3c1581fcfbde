-- Flemma's entry point: filetype `chat` for *.chat, the :Flemma command, and a lazy host start.
-- Nothing heavy happens here; the host starts with the first chat buffer or :Flemma command.
if vim.g.loaded_flemma then
  return
end
vim.g.loaded_flemma = true

if vim.fn.has("nvim-0.10") == 0 then
  vim.notify("Flemma: Neovim 0.10 or newer is required", vim.log.levels.ERROR)
  return
end

require("flemma").bootstrap()
