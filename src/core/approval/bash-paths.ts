// The paths a `bash` command names (issue 28, point 5), for the allow rules: a command that names
// a sensitive place, or (with the sandbox off) a place outside the project, is not approved by a
// rule that matches its text.
//
// Decisions (docs/approval.md, "What command rules can and cannot promise"):
// - Which words name paths cannot be known from the text (`grep TODO src`: `TODO` is a pattern,
//   `src` a directory), so every word but the command's name is taken as one, and so are the value
//   of an option written `--name=value` or `-o/path`, the value of a `NAME=value` word, a
//   `@file` word (curl), and the target of a redirection (`< .env`). A word that is not a path
//   resolves inside the working directory and changes nothing; an absolute one (`/api/v1`) or
//   one that climbs out (`../x`) makes the command ask without the sandbox: in doubt, ask.
// - A relative path is taken from the command's working directory and from every directory a
//   `cd` or `pushd` before it went to (each of them must pass: `cd .git && cat config` names
//   `.git/config`); after a `cd` whose target is not known (`cd -`, `cd $X`), relative paths are
//   not known either. `~` and `~/…` are the home directory; `~user` is not known.
// - What is known only when the command runs is not known here: a word with a variable
//   (`$HOME/x`), an unquoted glob or brace expansion (`*.txt`, `.[e]nv`, `.e{n,}v`), a path a
//   program builds. Such a word counts as outside the project: with the sandbox on (which hides
//   the sensitive places and bounds what a command writes) it passes; without it, it asks.
// - `/dev/null`, `/dev/stdin`, `/dev/stdout`, `/dev/stderr`, `/dev/tty` and `/dev/fd/N` are no
//   place. The code given to a shell (`sh -c '…'`, `eval`) is looked into the same way.

import { resolve as resolvePath } from 'node:path';
import { expandHome, namesHome } from '../util/expand-path.js';

import { describeSensitive } from '../tools/sandbox/sensitive.js';
import { type ParsedCommand, type SimpleCommand, type Word, parseCommand } from './bash-parse.js';
import { baseName, codeOf } from './bash-inner.js';
import { type CallScope, judgePath } from './scope.js';

export interface PathFinding {
  /** The word (or its part) as written. */
  given: string;
  /** `sensitive` always keeps a rule from approving; the others only without the sandbox. */
  kind: 'sensitive' | 'outside' | 'unknown';
  why: string;
}

const NO_PLACE = /^\/dev\/(?:null|stdin|stdout|stderr|tty|fd\/\d+)$/u;

/** The parts of a word that may name a path (see the header). */
function candidates(word: Word): Word[] {
  const text = word.text;
  const part = (value: string): Word => ({ ...word, text: value });
  if (text.startsWith('-')) {
    const eq = text.indexOf('=');
    if (eq > 0) return [part(text.slice(eq + 1))];
    // `-o/x`, `-f.env`: a short option's attached value (`-la` gives `a`, which is harmless).
    const attached = /^-[A-Za-z](.+)$/u.exec(text);
    return attached?.[1] === undefined ? [] : [part(attached[1])];
  }
  const out = [word];
  const eq = text.indexOf('=');
  if (eq > 0) out.push(part(text.slice(eq + 1)));
  if (text.startsWith('@') && text.length > 1) out.push(part(text.slice(1)));
  return out;
}

/** Where a candidate leads: an absolute path, or why that is not known. */
function locate(
  word: Word,
  base: string | undefined,
  home: string,
): { abs: string } | { unknown: string } | undefined {
  const text = word.text;
  if (text === '' || text === '-') return undefined;
  if (word.expansion) {
    return { unknown: `\`${text}\` holds a variable: where it leads is known only when it runs` };
  }
  if (word.glob) {
    return { unknown: `\`${text}\` is a glob: the files it names are known only when it runs` };
  }
  if (text.startsWith('~')) {
    try {
      if (namesHome(text)) return { abs: resolvePath(expandHome(text, home)) };
    } catch {
      // No such user: the shell leaves the word as it is, which nothing here can judge.
    }
    return { unknown: `\`${text}\` is another user's home directory, not one known here` };
  }
  if (text.startsWith('/')) return { abs: resolvePath(text) };
  if (base === undefined) {
    return {
      unknown: `\`${text}\` is relative to a directory a \`cd\` went to, which is not known`,
    };
  }
  return { abs: resolvePath(base, text) };
}

interface Walk {
  scope: CallScope & { home: string; sensitive: NonNullable<CallScope['sensitive']> };
  /** Every directory a relative path may be taken from; undefined stands for one not known. */
  bases: (string | undefined)[];
  findings: PathFinding[];
}

/**
 * `target`: the word is where a redirection writes. A place only a write makes sensitive (a build
 * script, an editor's task file) stops a rule when the command is known to write it (a redirection)
 * and, without the sandbox, whenever the command names it (`cp x Makefile`): what a program does
 * with its arguments is not known. Inside the sandbox such places are read-only or, for build
 * scripts, writable by design (docs/approval.md).
 */
function judge(walk: Walk, word: Word, target = false): void {
  const { scope } = walk;
  for (const candidate of candidates(word)) {
    for (const base of walk.bases) {
      const where = locate(candidate, base, scope.home);
      if (where === undefined) continue;
      if ('unknown' in where) {
        walk.findings.push({ given: candidate.text, kind: 'unknown', why: where.unknown });
        continue;
      }
      if (NO_PLACE.test(where.abs)) continue;
      const check = judgePath(candidate.text, where.abs, scope.project, scope.sensitive, target);
      const shown =
        check.real === candidate.text ? candidate.text : `${candidate.text} (${check.real})`;
      const written = target
        ? undefined
        : judgePath(candidate.text, where.abs, scope.project, scope.sensitive, true).sensitive;
      if (check.sensitive !== undefined) {
        walk.findings.push({
          given: candidate.text,
          kind: 'sensitive',
          why: `${shown} touches a sensitive place, ${describeSensitive(check.sensitive)}`,
        });
      } else if (written !== undefined) {
        walk.findings.push({
          given: candidate.text,
          kind: 'unknown',
          why: `${shown} is a place a write makes sensitive, ${describeSensitive(written)}, and what the command does with it is not known`,
        });
      } else if (!check.inProject) {
        walk.findings.push({
          given: candidate.text,
          kind: 'outside',
          why: `${shown} is outside the project (${scope.project.join(', ') || 'there is none'})`,
        });
      }
    }
  }
}

/** A `cd` or `pushd` adds where it goes to the directories relative paths are taken from. */
function follow(walk: Walk, command: SimpleCommand): void {
  const words = command.words.slice(command.assignments);
  const name = baseName(words[0]?.text ?? '');
  if (name === 'popd') {
    walk.bases.push(undefined);
    return;
  }
  if (name !== 'cd' && name !== 'pushd') return;
  const args = words.slice(1).filter((word) => !/^-[LPe@]*$/u.test(word.text) || word.text === '-');
  if (args.length === 0) {
    walk.bases.push(walk.scope.home);
    return;
  }
  const targets = walk.bases.map((base) =>
    args.length === 1 && args[0]?.text !== '-'
      ? locate(args[0] as Word, base, walk.scope.home)
      : undefined,
  );
  for (const target of targets) {
    walk.bases.push(target !== undefined && 'abs' in target ? target.abs : undefined);
  }
}

function walkCommands(walk: Walk, commands: readonly SimpleCommand[], depth: number): void {
  for (const command of commands) {
    command.words.forEach((word, index) => {
      if (index !== command.assignments) judge(walk, word);
    });
    for (const target of command.redirects) judge(walk, target, true);
    if (depth < 4) {
      for (const code of codeOf(command)) {
        walkCommands({ ...walk, bases: [...walk.bases] }, parseCommand(code).simple, depth + 1);
      }
    }
    follow(walk, command);
  }
}

/**
 * What the paths a command names say against the rules: sensitive places, places outside the
 * project, places not known. Undefined when the call's scope cannot tell (no working directory or
 * no sensitive places): then nothing may be approved by path.
 */
export function commandPaths(
  parsed: ParsedCommand,
  scope: CallScope | undefined,
): PathFinding[] | undefined {
  if (scope?.cwd === undefined || scope.home === undefined || scope.sensitive === undefined) {
    return undefined;
  }
  const walk: Walk = {
    scope: { ...scope, home: scope.home, sensitive: scope.sensitive },
    bases: [scope.cwd.real],
    findings: [],
  };
  walkCommands(walk, parsed.simple, 0);
  return walk.findings;
}
