// Path expansion, the one way every path a user or a model writes is read (docs/configuration.md,
// "Paths"): a leading `~` and, in paths from the configuration, environment variables.
//
// Rules:
// - `~` is the home directory and `~/x` lies in it; `~user` and `~user/x` are that user's home
//   directory (the current user's is `home`; another's is looked up in /etc/passwd). A user that
//   does not exist is an error (`PathExpansionError`), not a file named `~user`.
// - A `~` anywhere but at the start, or not followed by `/`, a user name or the end, is literal.
// - `$VAR`, `${VAR}` and `${VAR:-default}` anywhere in the path are the environment's values; a
//   variable that is unset or empty (with no default, or an empty one) drops the whole path
//   (undefined): an empty piece would quietly make another path of it (`$X/bin` → `/bin`).
//   Variables are expanded first, then a leading `~` of the result (`${XDG_CACHE_HOME:-~/.cache}`).
// - Paths a model writes (tool arguments) and `@file` references get the `~` rule only: text from
//   outside never reads the environment.
import { readFileSync } from 'node:fs';
import { userInfo } from 'node:os';

/** The environment variables are read from (Neovim's, when the host knows it). */
export type PathEnv = Readonly<Record<string, string | undefined>>;

/** A `~user` names no user. */
export class PathExpansionError extends Error {
  override name = 'PathExpansionError';
}

const TILDE = /^~([A-Za-z0-9._-]*)(?=\/|$)/u;
const VARIABLE = /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)/gu;

function currentUser(): string | undefined {
  try {
    return userInfo().username;
  } catch {
    return undefined;
  }
}

/** The home directory /etc/passwd gives `user`, or undefined. */
function passwdHome(user: string): string | undefined {
  let passwd: string;
  try {
    passwd = readFileSync('/etc/passwd', 'utf8');
  } catch {
    return undefined;
  }
  for (const line of passwd.split('\n')) {
    const fields = line.split(':');
    if (fields[0] === user && fields[5] !== undefined && fields[5] !== '') return fields[5];
  }
  return undefined;
}

/** `user`'s home directory; `home` is the current user's. Throws when there is no such user. */
function homeOf(user: string, home: string, path: string): string {
  if (user === '' || user === currentUser()) return home;
  const found = passwdHome(user);
  if (found === undefined) {
    throw new PathExpansionError(`No user '${user}' for the path '${path}'`);
  }
  return found;
}

/** `path` starts with `~` or `~user` (a home directory). */
export function namesHome(path: string): boolean {
  return TILDE.test(path);
}

/** `path` with a leading `~` or `~user` expanded (see the rules above); other paths unchanged. */
export function expandHome(path: string, home: string): string {
  const match = TILDE.exec(path);
  if (match === null) return path;
  const dir = homeOf(match[1] ?? '', home, path);
  const rest = path.slice(match[0].length);
  if (rest === '') return dir;
  return dir.endsWith('/') ? dir + rest.slice(1) : dir + rest;
}

/** `$VAR`, `${VAR}`, `${VAR:-default}` replaced; undefined when one is unset or empty. */
export function expandVariables(path: string, env: PathEnv): string | undefined {
  // Set from the replacer, which control flow analysis does not follow.
  const missing = { found: false };
  const out = path.replace(
    VARIABLE,
    (_all, braced: string | undefined, fallback: string | undefined, plain: string | undefined) => {
      const value = env[braced ?? plain ?? ''];
      if (value !== undefined && value !== '') return value;
      if (fallback !== undefined && fallback !== '') return fallback;
      missing.found = true;
      return '';
    },
  );
  return missing.found ? undefined : out;
}

/**
 * A path from the configuration: variables, then a leading `~`. Undefined when a variable it
 * needs is unset; throws `PathExpansionError` for an unknown `~user`.
 */
export function expandPath(path: string, env: PathEnv, home: string): string | undefined {
  const expanded = expandVariables(path, env);
  return expanded === undefined ? undefined : expandHome(expanded, home);
}
