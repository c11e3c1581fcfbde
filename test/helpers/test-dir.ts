// A temporary directory of one test: made before each test of the file, removed after it.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach } from 'vitest';

/**
 * A new temporary directory for each test. The function returned gives a path in it (made or
 * not): `dir('a', 'b')` is `<dir>/a/b`, `dir()` the directory itself. Call it at the top level of
 * a file.
 */
export function testDir(prefix: string): (...parts: string[]) => string {
  let root: string | undefined;
  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), prefix));
  });
  afterEach(() => {
    if (root !== undefined) rmSync(root, { recursive: true, force: true });
    root = undefined;
  });
  return (...parts) => {
    if (root === undefined) throw new Error('the temporary directory exists only in a test');
    return join(root, ...parts);
  };
}
