-- `require("flemma.follow")` is documented; the module lives in `flemma.chat.follow` (lua/flemma/chat/follow.lua).
return require("flemma.chat.follow")
