-- `require("flemma.buffer")` is documented; the module lives in `flemma.chat.buffer` (lua/flemma/chat/buffer.lua).
return require("flemma.chat.buffer")
