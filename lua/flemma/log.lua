-- `require("flemma.log")` is documented; the module lives in `flemma.host.log` (lua/flemma/host/log.lua).
return require("flemma.host.log")
