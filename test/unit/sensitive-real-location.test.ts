// The sensitive places at their real location (docs/security.md): a list of entries looks at
// the places when it is made, so a link made after an earlier list still counts, whether it is
// the place itself or a directory on its way.
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { findSensitive, sensitiveEntries } from '../../src/core/tools/sandbox/sensitive.js';

let root: string;

beforeAll(() => {
  root = realpathSync(mkdtempSync(join(tmpdir(), 'flemma-real-')));
});

afterAll(() => {
  rmSync(root, { recursive: true, force: true });
});

function labelOf(path: string, home: string, user?: unknown): string | undefined {
  const { entries } = sensitiveEntries(user, { home, env: {} });
  return findSensitive([path], entries)?.label;
}

describe('sensitiveEntries at the real location', () => {
  it('catches a ~/.ssh made a link after an earlier list was made', () => {
    const home = join(root, 'home1');
    const keys = join(root, 'keys1');
    mkdirSync(home);
    mkdirSync(keys);
    expect(labelOf(join(keys, 'id_ed25519'), home)).toBeUndefined();
    symlinkSync(keys, join(home, '.ssh'));
    expect(labelOf(join(keys, 'id_ed25519'), home)).toBe('~/.ssh');
  });

  it('catches a place reached through a directory on its way made a link later', () => {
    const home = join(root, 'home2');
    const elsewhere = join(root, 'elsewhere2');
    mkdirSync(home);
    mkdirSync(join(elsewhere, '.aws'), { recursive: true });
    const user = [`${home}/conf/.aws`];
    expect(labelOf(join(elsewhere, '.aws', 'credentials'), home, user)).toBeUndefined();
    symlinkSync(elsewhere, join(home, 'conf'));
    expect(labelOf(join(elsewhere, '.aws', 'credentials'), home, user)).toBe(`${home}/conf/.aws`);
  });

  it('follows a home that is itself a link, to a place not there yet', () => {
    const real = join(root, 'real3');
    mkdirSync(real);
    const home = join(root, 'home3');
    symlinkSync(real, home);
    expect(labelOf(join(real, '.gnupg', 'secring.gpg'), home)).toBe('~/.gnupg');
    expect(labelOf(join(real, 'notes.txt'), home)).toBeUndefined();
  });

  it('follows a dangling link to where it would lead', () => {
    const home = join(root, 'home4');
    mkdirSync(home);
    symlinkSync(join(root, 'later4'), join(home, '.netrc'));
    expect(labelOf(join(root, 'later4'), home)).toBe('~/.netrc');
  });
});
