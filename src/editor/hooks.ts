// Fires lifecycle hooks inside Neovim, where `hooks.on` subscribers and `User` autocmds run.
import type { HookName, HookPayloads } from '../core/hooks.js';
import type { LuaBridge } from './lua.js';

export class HookEmitter {
  constructor(private readonly lua: LuaBridge) {}

  /** Deliver an event; resolves once every subscriber and autocmd has run. */
  async emit<N extends HookName>(name: N, data: HookPayloads[N]): Promise<void> {
    await this.lua.call('hooks.emit', { name, data });
  }

  /** Deliver an event without waiting for its subscribers (it keeps its place on the channel). */
  post<N extends HookName>(name: N, data: HookPayloads[N]): void {
    this.lua.notify('hooks.emit', { name, data });
  }
}
