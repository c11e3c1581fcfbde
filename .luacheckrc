-- luacheck for the Lua shim (Lua 5.1 / LuaJIT inside Neovim): `npm run lint:lua`.
std = "luajit"
globals = { "vim" }
max_line_length = false -- StyLua keeps lines to 120 columns; comments may name long paths
codes = true
exclude_files = { "node_modules/", ".tests/", "dist/" }
