// `.gitignore` rules for the completion of `@./` paths (docs/completion.md): the listing of one
// directory keeps what git would not ignore, without running git for each keystroke.
//
// Decisions:
// - The rules are git's (gitignore(5)): blank lines and `#` comments are skipped, `\#` and `\!`
//   are literal, a leading `!` re-includes, a trailing `/` matches directories only, a pattern
//   with a `/` before its end is anchored to the directory of its `.gitignore`, any other
//   matches a name at any depth; the last matching rule decides. The globs are Flemma's one
//   dialect (src/core/util/glob.ts), which agrees with git's for `*`, `?`, `**` and classes.
// - Rules are read, lowest precedence first: `.git/info/exclude`, then each `.gitignore` from the
//   work tree's top down to the listed directory. The user's `core.excludesFile` is not read
//   (it needs git's configuration); what it hides shows in the list.
// - A directory's entries are judged by themselves: completing inside a directory that is
//   ignored (typed by hand, say `@./node_modules/`) lists it, as the `find` tool finds files
//   below an excluded directory it is asked about.
import { pathGlob, type Matcher } from '../util/glob.js';

export interface IgnoreRule {
  /** The directory of the rule's file, relative to the work tree's top ('' for the top). */
  readonly base: string;
  readonly negate: boolean;
  readonly dirOnly: boolean;
  readonly matches: Matcher;
}

/** The rule of one line of a `.gitignore`, or undefined for a blank line or a comment. */
function parseLine(raw: string, base: string): IgnoreRule | undefined {
  let line = raw.replace(/(?<!\\)\s+$/u, '');
  if (line === '' || line.startsWith('#')) return undefined;
  let negate = false;
  if (line.startsWith('!')) {
    negate = true;
    line = line.slice(1);
  } else if (line.startsWith('\\#') || line.startsWith('\\!')) {
    line = line.slice(1);
  }
  const dirOnly = line.endsWith('/');
  if (dirOnly) line = line.replace(/\/+$/u, '');
  if (line === '') return undefined;
  const anchored = line.includes('/');
  const pattern = line.replace(/^\/+/u, '');
  const glob = pathGlob(pattern);
  const matches: Matcher = anchored ? glob : (rel) => glob(rel.slice(rel.lastIndexOf('/') + 1));
  return { base, negate, dirOnly, matches };
}

/** The rules of one ignore file whose directory is `base` (relative to the work tree's top). */
export function parseIgnore(text: string, base: string): IgnoreRule[] {
  const rules: IgnoreRule[] = [];
  for (const line of text.split(/\r?\n/u)) {
    const rule = parseLine(line, base);
    if (rule !== undefined) rules.push(rule);
  }
  return rules;
}

/** Whether `path` (relative to the work tree's top) is ignored by `rules` (lowest first). */
export function ignoredBy(rules: readonly IgnoreRule[], path: string, isDir: boolean): boolean {
  for (let index = rules.length - 1; index >= 0; index--) {
    const rule = rules[index];
    if (rule === undefined || (rule.dirOnly && !isDir)) continue;
    let rel = path;
    if (rule.base !== '') {
      if (!path.startsWith(`${rule.base}/`)) continue;
      rel = path.slice(rule.base.length + 1);
    }
    if (rule.matches(rel)) return !rule.negate;
  }
  return false;
}
