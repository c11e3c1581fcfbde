// The bridge to the shim's Lua side: every host → Lua call goes through one named entry point,
// `require("flemma.rpc").dispatch(method, params)`, with values passed as arguments. The methods,
// how each may be sent, and the types of their params and answers are those of `./protocol/`.
import type { Neovim } from 'neovim';
import { requestNow } from './request-now.js';
import type { LuaAnswer, LuaNotification, LuaParams, LuaRequest } from './protocol/index.js';
import { trace } from './trace.js';

const DISPATCH = 'return require("flemma.rpc").dispatch(...)';
const DISPATCH_MANY = 'return require("flemma.rpc").dispatch_many(...)';

/** The slice of the Neovim client the editor adapter uses; tests may pass any client. */
export interface RpcPort {
  request(method: string, args: unknown[]): Promise<unknown>;
  notify(method: string, args: unknown[]): void;
}

export function rpcPortOf(nvim: Neovim): RpcPort {
  return {
    request: (method, args) => requestNow(nvim, method, args),
    notify: (method, args) => {
      nvim.notify(method, args);
    },
  };
}

export class LuaBridge {
  private queued: [string, unknown][] = [];
  private scheduled = false;

  constructor(private readonly rpc: RpcPort) {}

  /** Call a Lua-side method and wait for its answer. */
  call<M extends LuaRequest>(method: M, params: LuaParams<M>): Promise<LuaAnswer<M>> {
    // Notifications queued before this call reach Lua before it.
    this.flush();
    trace(`wire:call ${wireLabel(method, params)}`);
    // NOTE: the one place Lua's answers are taken to be what the protocol says they are.
    const answer = this.rpc.request('nvim_exec_lua', [DISPATCH, [method, params]]) as Promise<
      LuaAnswer<M>
    >;
    return answer.finally(() => {
      trace(`wire:answer ${method}`);
    });
  }

  /**
   * Call a Lua-side method without waiting. Notifications made in the same turn of the event
   * loop travel as one message (each one Neovim handles is one more wake-up and redraw); they
   * keep their order, also relative to calls. Errors are handled (and logged) on the Lua side:
   * NOTE: Neovim reports a failed notification as `nvim_error_event`, which the node client drops.
   */
  notify<M extends LuaNotification>(method: M, params: LuaParams<M>): void {
    this.queued.push([method, params]);
    trace(`wire:queue ${wireLabel(method, params)}`);
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.flush();
    });
  }

  /** Send the queued notifications now. */
  flush(): void {
    this.scheduled = false;
    const batch = this.queued;
    if (batch.length === 0) return;
    this.queued = [];
    trace(`wire:notify ${String(batch.length)}`);
    const single = batch.length === 1 ? batch[0] : undefined;
    if (single !== undefined) {
      this.rpc.notify('nvim_exec_lua', [DISPATCH, single]);
    } else {
      this.rpc.notify('nvim_exec_lua', [DISPATCH_MANY, [batch]]);
    }
  }
}

/** A method as the wire trace names it: a hook with its event's name (`hooks.emit:tool:executing`). */
export function wireLabel(method: string, params: unknown): string {
  if (method !== 'hooks.emit') return method;
  const name = (params as { name?: unknown } | null)?.name;
  return typeof name === 'string' ? `${method}:${name}` : method;
}
