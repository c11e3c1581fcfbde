// The protocol between the Lua shim and the host, both directions, in one place: every Lua → host
// action and every host → Lua method, with how it travels and the types of its params and
// answer. The host's dispatch (`src/host/actions.ts`) is typed by `LuaToHost` and checks incoming
// params with `LUA_TO_HOST`'s decoders; `LuaBridge` (`../lua.ts`) is typed by `HostToLua`, so a
// caller cannot name a method that does not exist or send it the wrong way; the table of
// docs/rpc.md is generated from `LUA_TO_HOST` and `HOST_TO_LUA` (`npm run docs:rpc`). A test
// fails when these, the Lua side's method table (`lua/flemma/rpc.lua`) and the Lua callers drift.
//
// The actions are in `./lua-to-host.ts`, the methods in `./host-to-lua.ts`, the data types of the
// messages in `./wire.ts`; this module is the one to import.
export * from './common.js';
export * from './lua-to-host.js';
export * from './host-to-lua.js';
export * from './review.js';
export type * from './wire.js';
export type { PushedState } from './pushed.js';
