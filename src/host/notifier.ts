// The one place that sends the user a message (`Flemma: …`): every service speaks through the
// `Notifier` it gets (`base.notify`), never through its own `notify` call to Lua (a lint rule).
import type { Notifier, NotifyLevel, NotifyOptions } from '../core/util/notify.js';
import type { LuaBridge } from '../editor/lua.js';

type Sender = Pick<LuaBridge, 'notify'>;

/** Messages to the user (`Flemma: …`), without waiting for Neovim. */
export function notifier(base: { readonly lua: Sender }): Notifier {
  const say =
    (level: NotifyLevel) =>
    (message: string, options?: NotifyOptions): void => {
      base.lua.notify('notify', { level, message, ...options });
    };
  return { info: say('info'), warn: say('warn'), error: say('error') };
}

/** Takes back the message shown with `key` (what it said is no longer true). */
export function retractNotice(lua: Sender, key: string): void {
  lua.notify('notify.retract', { key });
}
