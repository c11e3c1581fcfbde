// The one path expansion (src/core/util/expand-path.ts): `~`, `~user`, environment variables.
import { userInfo } from 'node:os';
import { describe, expect, it } from 'vitest';
import {
  PathExpansionError,
  expandHome,
  expandPath,
  expandVariables,
  namesHome,
} from '../../src/core/util/expand-path.js';

const home = '/home/me';

describe('expandHome', () => {
  it('a bare ~ is the home directory, ~/x lies in it', () => {
    expect(expandHome('~', home)).toBe(home);
    expect(expandHome('~/', home)).toBe(`${home}/`);
    expect(expandHome('~/notes/a.md', home)).toBe(`${home}/notes/a.md`);
    expect(expandHome('~/x', '/')).toBe('/x');
  });

  it("~user is that user's home: the current user's is home, another's from /etc/passwd", () => {
    const me = userInfo().username;
    expect(expandHome(`~${me}`, home)).toBe(home);
    expect(expandHome(`~${me}/x`, home)).toBe(`${home}/x`);
    expect(expandHome('~root/x', home)).toMatch(/^\/.*\/x$/);
  });

  it('an unknown user is an error, not a file named ~user', () => {
    expect(() => expandHome('~no-such-user-flemma/x', home)).toThrow(PathExpansionError);
    expect(() => expandHome('~no-such-user-flemma', home)).toThrow(
      "No user 'no-such-user-flemma' for the path '~no-such-user-flemma'",
    );
  });

  it('a ~ anywhere else is literal', () => {
    expect(expandHome('a/~/b', home)).toBe('a/~/b');
    expect(expandHome('~+/x', home)).toBe('~+/x');
    expect(expandHome('/abs/~', home)).toBe('/abs/~');
    expect(expandHome('notes~', home)).toBe('notes~');
  });

  it('namesHome says whether a path starts at a home directory', () => {
    expect(namesHome('~')).toBe(true);
    expect(namesHome('~/x')).toBe(true);
    expect(namesHome('~bob/x')).toBe(true);
    expect(namesHome('./~')).toBe(false);
    expect(namesHome('~+')).toBe(false);
  });
});

describe('expandVariables', () => {
  const env = { HOME: home, EMPTY: '', CACHE: '/c' };

  it('$VAR, ${VAR} and ${VAR:-default} anywhere in the path', () => {
    expect(expandVariables('$HOME/x', env)).toBe(`${home}/x`);
    expect(expandVariables('${CACHE}/flemma', env)).toBe('/c/flemma');
    expect(expandVariables('/a/${NOPE:-b}/c', env)).toBe('/a/b/c');
    expect(expandVariables('${EMPTY:-/d}', env)).toBe('/d');
    expect(expandVariables('/no/vars', env)).toBe('/no/vars');
    expect(expandVariables('$ 1 $-', env)).toBe('$ 1 $-');
  });

  it('an unset or empty variable drops the whole path', () => {
    expect(expandVariables('$NOPE/bin', env)).toBeUndefined();
    expect(expandVariables('${EMPTY}', env)).toBeUndefined();
    expect(expandVariables('${NOPE:-}', env)).toBeUndefined();
  });
});

describe('expandPath', () => {
  it('variables first, then a leading ~ of the result', () => {
    expect(expandPath('${XDG_CACHE_HOME:-~/.cache}', {}, home)).toBe(`${home}/.cache`);
    expect(expandPath('${XDG_CACHE_HOME:-~/.cache}', { XDG_CACHE_HOME: '/x' }, home)).toBe('/x');
    expect(expandPath('~/$SUB', { SUB: 'a' }, home)).toBe(`${home}/a`);
    expect(expandPath('~/$SUB', {}, home)).toBeUndefined();
  });
});
