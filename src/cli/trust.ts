// The trust decision of a chat file for `flemma run` (docs/cli.md, "Trust"), the one Neovim makes
// (`lua/flemma/config/trust.lua`), read from the same files without Neovim:
//   - Neovim's trust database (`:trust`, `vim.secure`): `stdpath("state")/trust`, lines of
//     `<sha256 or !> <path>`;
//   - Flemma's records beside it: `stdpath("state")/flemma/trust.json`, `files[real path]` the
//     digest of what only a trusted file may use (frontmatter, template code, file references).
// A file is trusted when the database lists its path (not `!`) and either the recorded digest is
// the file's now or the database's hash is the file's content's. `--trust` trusts it for the run
// only: nothing is recorded (`:trust` in Neovim records it).
import { createHash } from 'node:crypto';
import { readFile, realpath } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { ChatDocument } from '../core/chat/ast.js';
import { trustDigest } from '../core/config/trust.js';
import type { TrustState } from '../files/api.js';

type Env = Readonly<Record<string, string | undefined>>;

/** Neovim's `stdpath("state")` for `env` (`$NVIM_APPNAME` included). */
export function nvimStateDir(env: Env): string {
  const app =
    env['NVIM_APPNAME'] !== undefined && env['NVIM_APPNAME'] !== '' ? env['NVIM_APPNAME'] : 'nvim';
  if (process.platform === 'win32') {
    return join(env['LOCALAPPDATA'] ?? join(homedir(), 'AppData', 'Local'), `${app}-data`);
  }
  const state = env['XDG_STATE_HOME'];
  return join(
    state !== undefined && state !== '' ? state : join(env['HOME'] ?? homedir(), '.local', 'state'),
    app,
  );
}

async function readText(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, 'utf8');
  } catch {
    return undefined;
  }
}

/** The database's entry for `path`: its hash, `!` (denied) or undefined (not listed). */
function databaseEntry(text: string | undefined, path: string): string | undefined {
  for (const line of (text ?? '').split('\n')) {
    const space = line.indexOf(' ');
    if (space > 0 && line.slice(space + 1).replace(/\r$/, '') === path) return line.slice(0, space);
  }
  return undefined;
}

function recordedDigest(text: string | undefined, path: string): string | undefined {
  try {
    const files = (JSON.parse(text ?? '{}') as { files?: Record<string, unknown> }).files;
    const digest = files?.[path];
    return typeof digest === 'string' ? digest : undefined;
  } catch {
    return undefined;
  }
}

/** The statuses that act (approved, denied, rejected) of the file's placeholders, by tool id. */
function actingStatuses(document: ChatDocument): Record<string, string> {
  const out: Record<string, string> = {};
  for (const message of document.messages) {
    for (const segment of message.segments) {
      const status = segment.kind === 'tool_result' ? segment.placeholder?.status : undefined;
      if (
        segment.kind === 'tool_result' &&
        status !== undefined &&
        status !== 'pending' &&
        status !== 'aborted'
      ) {
        out[segment.toolUseId] = status;
      }
    }
  }
  return out;
}

export interface TrustInput {
  /** The chat file's path. */
  path: string;
  /** Its bytes as read. */
  bytes: Buffer;
  document: ChatDocument;
  /** `--trust`. */
  given: boolean;
  env: Env;
}

/**
 * The chat's trust: `why` is `given` (--trust), `allowed`, `untrusted` (not in the database),
 * `denied` (`:trust ++deny`) or `changed` (trusted before, changed since outside Neovim).
 */
export async function decideTrust(input: TrustInput): Promise<TrustState> {
  if (input.given) return { trusted: true, why: 'given' };
  const real = await realpath(input.path).catch(() => input.path);
  const state = nvimStateDir(input.env);
  const entry = databaseEntry(await readText(join(state, 'trust')), real);
  let why = 'untrusted';
  if (entry === '!') why = 'denied';
  else if (entry !== undefined) {
    const recorded = recordedDigest(await readText(join(state, 'flemma', 'trust.json')), real);
    if (
      recorded === trustDigest(input.document) ||
      createHash('sha256').update(input.bytes).digest('hex') === entry
    ) {
      return { trusted: true, why: 'allowed' };
    }
    why = 'changed';
  }
  const placeholders = actingStatuses(input.document);
  return Object.keys(placeholders).length > 0
    ? { trusted: false, why, placeholders }
    : { trusted: false, why };
}

/** What the CLI says on stderr of a chat with a frontmatter that is not trusted. */
export function trustNote(state: TrustState, file: string): string {
  const reason =
    state.why === 'denied'
      ? 'denied in the trust database (:trust ++deny)'
      : state.why === 'changed'
        ? 'changed since it was trusted in Neovim'
        : 'not trusted';
  return `${file} is ${reason}: its frontmatter applies only the options any file may set`;
}
