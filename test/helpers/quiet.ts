// The node client replaces `console` the first time it builds its own logger; tests keep their
// console by building it once up front and putting the originals back.
import { createRequire } from 'node:module';

const original = { ...console };
const require = createRequire(import.meta.url);

export const quietLogger = {
  level: 'error',
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
} as never;

let restored = false;

export function restoreConsole(): void {
  if (!restored) {
    (require('neovim/lib/utils/logger') as { getLogger(): unknown }).getLogger();
    restored = true;
  }
  Object.assign(console, original);
}
