// Temporary directories a test file makes and never has to remove by hand.
import { mkdirSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll } from 'vitest';

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

/**
 * A temporary directory for the whole file (its real path), made before its first test and
 * removed after its last. The function returned makes a directory in it and returns its path:
 * `dir('a', 'b')` is `<root>/a/b`, `dir()` the root itself. Call it at the top level of a file.
 */
export function fileTempDir(prefix: string): (...parts: string[]) => string {
  let root: string | undefined;
  beforeAll(() => {
    root = realpathSync(mkdtempSync(join(tmpdir(), prefix)));
  });
  afterAll(() => {
    if (root !== undefined) rmSync(root, { recursive: true, force: true });
    root = undefined;
  });
  return (...parts) => {
    if (root === undefined) throw new Error('the temporary directory exists only in the tests');
    const path = join(root, ...parts);
    mkdirSync(path, { recursive: true });
    return path;
  };
}
