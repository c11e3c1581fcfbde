// Temporary directories a test file makes and never has to remove by hand.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach } from 'vitest';

/**
 * A maker of temporary directories (`make('flemma-x-')`), each removed after its test. Call it at
 * the top level of a file, before `launcher()`: after-hooks run last-declared first, so Neovim
 * has quit before its directories go.
 */
export function tempDirs(): (prefix: string) => string {
  const made: string[] = [];
  afterEach(() => {
    for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
  });
  return (prefix) => {
    const dir = mkdtempSync(join(tmpdir(), prefix));
    made.push(dir);
    return dir;
  };
}
