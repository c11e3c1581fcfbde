// The bridge to the shim's Lua side: every host → Lua call goes through one named entry point,
// `require("flemma.rpc").dispatch(method, params)`, with values passed as arguments.
import type { Neovim } from 'neovim';

const DISPATCH = 'return require("flemma.rpc").dispatch(...)';

/** The slice of the Neovim client the editor adapter uses; tests may pass any client. */
export interface RpcPort {
  request(method: string, args: unknown[]): Promise<unknown>;
  notify(method: string, args: unknown[]): void;
}

export function rpcPortOf(nvim: Neovim): RpcPort {
  return {
    request: (method, args) => nvim.request(method, args) as Promise<unknown>,
    notify: (method, args) => {
      nvim.notify(method, args);
    },
  };
}

export class LuaBridge {
  constructor(private readonly rpc: RpcPort) {}

  /** Call a Lua-side method and wait for its answer. */
  call(method: string, params: unknown): Promise<unknown> {
    return this.rpc.request('nvim_exec_lua', [DISPATCH, [method, params ?? null]]);
  }

  /**
   * Call a Lua-side method without waiting. Errors are handled (and logged) on the Lua side:
   * NOTE: Neovim reports a failed notification as `nvim_error_event`, which the node client drops.
   */
  notify(method: string, params: unknown): void {
    this.rpc.notify('nvim_exec_lua', [DISPATCH, [method, params ?? null]]);
  }
}
