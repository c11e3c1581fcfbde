// Where a tool call's paths lie (issue 19): what the resolvers that approve by name (the lists and
// presets of `tools.auto_approve`, the sandbox resolver) check before they approve, and what the
// sensitive-place guard checks after any resolver approved.
//
// Decisions (see docs/approval.md, "Paths: the project and the sensitive places"):
// - The paths a call touches come from its input, for the built-in file tools by name: `read`,
//   `write` and `edit` take `path` against the chat file's directory (Neovim's cwd for an unsaved
//   chat), or against the first sandbox root while roots confine the file tools; `ls`, `grep` and
//   `find` take `path` against the tool's working directory (`tools.<name>.cwd`), which is also
//   their default. `~` is the home directory. A path is judged where it is written and where it
//   really leads: the realpath of its longest existing prefix, the rest appended. Some places are
//   sensitive for a write only (a build script, an editor's task file): `write` and `edit` and
//   a command's working directory are writes; `read`, `ls`, `grep` and `find` are not.
// - Other tools' paths cannot be known. For a tool that runs commands (one the sandbox resolver
//   may approve: bash), its working directory stands in: the sandbox approves it only there.
// - The project is Neovim's cwd, the chat file's directory and the configured sandbox roots (real
//   paths). A directory that is `/`, the home directory or one above it does not count: it would
//   make everything (or every secret in the home directory) part of the project.
// - The lists and the sandbox resolver pass (with a note saying why) for a call that leaves the
//   project or touches a sensitive place; a lower resolver may still decide (the catch-all of
//   `tools.require_approval = false`, a resolver of yours), so the default is to ask.
// - The sensitive places are absolute: whichever resolver approved a call that touches one (a
//   function, "always", YOLO, the catch-all…), the guard turns the approval into a question, as
//   `urn:flemma:approval:sensitive`. Denials stand. Only the user's own answer to that question
//   runs the call.

import { resolve as resolvePath } from 'node:path';

import { resolveAgainst } from '../tools/context.js';
import { parseSandboxSettings } from '../tools/sandbox/index.js';
import { type PathEnv, expandPathVariable, isUnder, resolveReal } from '../tools/sandbox/paths.js';
import { parseRoots } from '../tools/sandbox/roots.js';
import {
  type EditorDirs,
  type SensitiveEntry,
  describeSensitive,
  findSensitive,
  sensitiveEntries,
} from '../tools/sandbox/sensitive.js';
import { type ApprovalResult, guarded } from './chain.js';

export const SENSITIVE_GUARD = 'urn:flemma:approval:sensitive';

/** The built-in tools whose paths are known, by how they resolve a relative path. */
const FILE_TOOLS: ReadonlySet<string> = new Set(['read', 'write', 'edit']);
const SEARCH_TOOLS: ReadonlySet<string> = new Set(['ls', 'grep', 'find']);
/** The file tools that write: a place only a write makes sensitive (a build script) counts. */
const WRITE_TOOLS: ReadonlySet<string> = new Set(['write', 'edit']);

export interface PathCheck {
  /** The path as the call gave it (the working directory when it gave none). */
  given: string;
  /** The absolute path as written (normalized, links not followed). */
  abs: string;
  /** Where it really leads. */
  real: string;
  inProject: boolean;
  sensitive?: SensitiveEntry;
}

export interface CallScope {
  /** The project's directories (real). */
  project: readonly string[];
  /** The call's paths, for a tool whose paths are known. */
  paths?: readonly PathCheck[];
  /** The working directory, for a tool that runs commands. */
  cwd?: PathCheck;
  /** For a tool that runs commands: the home directory and the sensitive places, to judge the
   * paths its command names (bash-paths.ts). */
  home?: string;
  sensitive?: readonly SensitiveEntry[];
}

export interface ScopeFacts {
  /** Neovim's working directory. */
  cwd: string;
  /** The chat file, or null for an unsaved buffer. */
  filename: string | null;
  home: string;
  /** The configured sandbox roots (absolute). */
  roots: readonly string[];
  /** Where `read`, `write` and `edit` take a relative path from. */
  fileBase: string;
  /** A tool's working directory (`tools.<name>.cwd`, expanded). */
  toolCwd: (tool: string) => string;
  /** Whether a tool runs commands (the sandbox resolver may approve it). */
  runsCommands: (tool: string) => boolean;
  sensitive: readonly SensitiveEntry[];
}

/** The project's directories: cwd, the chat's directory and the roots, minus `/` and home's. */
export function projectDirs(
  facts: Pick<ScopeFacts, 'cwd' | 'filename' | 'home' | 'roots'>,
): string[] {
  const home = resolveReal(facts.home);
  const dirs = [facts.cwd, ...facts.roots];
  if (facts.filename !== null && facts.filename !== '') {
    dirs.push(resolvePath(resolveReal(resolvePath(facts.cwd, facts.filename)), '..'));
  }
  const real = dirs.map((dir) => resolveReal(resolvePath(facts.cwd, dir)));
  return [...new Set(real)].filter((dir) => dir !== '/' && !isUnder(home, dir)).sort();
}

/** Where `abs` (absolute; `given` as the call wrote it) lies: real path, project, sensitive. */
export function judgePath(
  given: string,
  abs: string,
  project: readonly string[],
  places: readonly SensitiveEntry[],
  write: boolean,
): PathCheck {
  const real = resolveReal(abs);
  const sensitive = findSensitive([abs, real], places, { write });
  return {
    given,
    abs,
    real,
    inProject: project.some((dir) => isUnder(real, dir)),
    ...(sensitive === undefined ? {} : { sensitive }),
  };
}

const check = judgePath;

function pathField(input: unknown): string | undefined {
  if (input === null || typeof input !== 'object') return undefined;
  const path = (input as Record<string, unknown>)['path'];
  return typeof path === 'string' && path !== '' ? path : undefined;
}

/** Where a call's paths lie; `toolName` is the tool's own (canonical) name. */
export function callScope(toolName: string, input: unknown, facts: ScopeFacts): CallScope {
  const project = projectDirs(facts);
  const path = pathField(input);
  if (FILE_TOOLS.has(toolName)) {
    // A call without a path fails in the tool; there is nothing to approve it for.
    const paths =
      path === undefined
        ? []
        : [
            check(
              path,
              resolveAgainst(facts.fileBase, path, facts.home),
              project,
              facts.sensitive,
              WRITE_TOOLS.has(toolName),
            ),
          ];
    return { project, paths };
  }
  if (SEARCH_TOOLS.has(toolName)) {
    const cwd = facts.toolCwd(toolName);
    const abs = path === undefined ? cwd : resolveAgainst(cwd, path, facts.home);
    return { project, paths: [check(path ?? cwd, abs, project, facts.sensitive, false)] };
  }
  if (facts.runsCommands(toolName)) {
    const cwd = facts.toolCwd(toolName);
    return {
      project,
      cwd: check(cwd, cwd, project, facts.sensitive, true),
      home: facts.home,
      sensitive: facts.sensitive,
    };
  }
  return { project };
}

function shown(path: PathCheck): string {
  return path.real === path.given ? path.given : `${path.given} (${path.real})`;
}

function projectText(project: readonly string[]): string {
  return project.length === 0
    ? 'there is none: Neovim runs in / or your home directory, and so does the chat'
    : project.join(', ');
}

/** Why a path keeps an approval by name from applying; undefined when it does not. */
function pathProblem(
  verb: string,
  path: PathCheck,
  project: readonly string[],
): string | undefined {
  if (path.sensitive !== undefined) {
    return `${verb} ${shown(path)} touches a sensitive place, ${describeSensitive(path.sensitive)}: it is never approved automatically`;
  }
  if (!path.inProject) {
    return `${verb} ${shown(path)} is outside the project (${projectText(project)}): only the project is approved automatically`;
  }
  return undefined;
}

/** Why a list (or preset) approval does not apply to this call; undefined when it does. */
export function listScopeProblem(
  scope: CallScope | undefined,
  toolName: string,
): string | undefined {
  for (const path of scope?.paths ?? []) {
    const problem = pathProblem(`${toolName} of`, path, scope?.project ?? []);
    if (problem !== undefined) return problem;
  }
  return undefined;
}

/** Why the sandbox does not approve this command tool here; undefined when it may. */
export function commandScopeProblem(
  scope: CallScope | undefined,
  toolName: string,
): string | undefined {
  if (scope?.cwd === undefined) return `the working directory of ${toolName} is not known`;
  return pathProblem(`${toolName} running in`, scope.cwd, scope.project);
}

/**
 * `result` with an approval of a call that touches a sensitive place turned into a question, as
 * decided by `urn:flemma:approval:sensitive` (its note names the place and the resolver that had
 * approved). Anything else is returned as it is.
 */
export function guardSensitive(
  result: ApprovalResult,
  scope: CallScope | undefined,
  toolName: string,
): ApprovalResult {
  if (result.decision !== 'approve') return result;
  const hit = scope?.paths?.find((path) => path.sensitive !== undefined);
  if (hit?.sensitive === undefined) return result;
  const place = describeSensitive(hit.sensitive);
  return guarded(
    result,
    SENSITIVE_GUARD,
    (approver) =>
      `${toolName} of ${shown(hit)} touches a sensitive place, ${place}: ${approver} approved it, but a sensitive place is never approved automatically`,
  );
}

/** What `scopeFacts` reads: the editor's facts and the buffer's configuration. */
export interface ScopeInput {
  facts: {
    cwd: string;
    filename: string | null;
    sandbox_override?: boolean | null;
    editor_dirs?: EditorDirs | undefined;
  };
  home: string;
  env: PathEnv;
  /** The buffer's `tools` options. */
  tools: Record<string, unknown> | undefined;
  /** The buffer's `sandbox` options. */
  sandbox: unknown;
  runsCommands: (tool: string) => boolean;
  /** The caller's store of the sensitive places' expressions (`SensitiveFacts.compiled`). */
  compiled?: Map<string, RegExp> | undefined;
}

/**
 * The facts `callScope` needs for one buffer, from its configuration: the sandbox roots, where the
 * file tools start, the tools' working directories and the sensitive places. A setting that does
 * not expand (an unknown `urn:`) counts as absent here; the tools report it when they run.
 */
export function scopeFacts(input: ScopeInput): { facts: ScopeFacts; warnings: string[] } {
  const { facts, home, env } = input;
  const where = { cwd: facts.cwd, filename: facts.filename };
  const expand = (path: string): string | undefined => {
    try {
      return expandPathVariable(path, where, env, home);
    } catch {
      return undefined;
    }
  };
  const sandbox = input.sandbox !== null && typeof input.sandbox === 'object' ? input.sandbox : {};
  const parsed = parseRoots((sandbox as Record<string, unknown>)['roots'], expand);
  const roots = parsed.error === undefined ? parsed.roots.map((root) => root.path) : [];
  const enabled = facts.sandbox_override ?? parseSandboxSettings(sandbox).enabled;
  const chatDir =
    facts.filename === null || facts.filename === ''
      ? facts.cwd
      : resolvePath(facts.cwd, facts.filename, '..');
  const first = roots[0];
  const { entries, warnings } = sensitiveEntries(input.tools?.['sensitive_paths'], {
    home,
    env,
    editorDirs: facts.editor_dirs,
    compiled: input.compiled,
  });
  return {
    facts: {
      cwd: facts.cwd,
      filename: facts.filename,
      home,
      roots,
      fileBase: enabled && first !== undefined ? first : chatDir,
      toolCwd: (tool) => {
        const setting = (input.tools?.[tool] as Record<string, unknown> | undefined)?.['cwd'];
        return (
          (typeof setting === 'string' && setting !== '' ? expand(setting) : undefined) ?? facts.cwd
        );
      },
      runsCommands: input.runsCommands,
      sensitive: entries,
    },
    warnings,
  };
}
