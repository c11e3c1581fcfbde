// The one glob dialect: every pattern a user writes (the find tool's `pattern`, grep's `glob`,
// `tools.sensitive_paths`, tool policy and hook lists, MCP `include` / `exclude`, the model part
// of a `tools.calling` key) is matched by picomatch with the options below, stated here once.
// docs/tools.md, "Globs", says the same for users.
//
// The dialect:
// - `*` any run of characters and `?` one character, both within a path segment; `**` as a whole
//   segment spans any number of directories (none included); `[abc]`, `[a-z]`, `[!abc]`;
//   `{a,b}` (nested too) and `{1..3}`; `\` makes the next character literal.
// - Dot files are not special: `*` matches `.env`. (`.` and `..` as whole segments never match.)
// - Case matters, and `/` is the separator on every platform.
// - A leading `!` is literal (lists say what they exclude by themselves), and so are `(`, `)`
//   and `|` (so no extglobs such as `+(a|b)`): a path like `~/notes (old)` names itself.
//
// Two kinds of subject:
// - paths: the above;
// - names (tool names, MCP tool names, model names): one string, not a path, so `*` also spans a
//   `/` inside the name (picomatch's `bash` option); `?` and classes still stop at `/`.

import picomatch from 'picomatch';

const DIALECT: picomatch.PicomatchOptions = {
  dot: true,
  nocase: false,
  nonegate: true,
  noextglob: true,
  // `[!abc]` as a negated class (as `[^abc]` is), and `[[:alpha:]]` classes.
  posix: true,
  windows: false,
};

const NAMES: picomatch.PicomatchOptions = { ...DIALECT, bash: true };

export type Matcher = (subject: string) => boolean;

/** Characters that may make a pattern more than its literal text. */
const SYNTAX = /[*?[\]{}\\]/u;

/** A pattern without any syntax matches its own text only (picomatch is not asked). */
function literal(pattern: string): Matcher | undefined {
  return SYNTAX.test(pattern) ? undefined : (subject) => subject === pattern;
}

/**
 * The pattern as picomatch takes it: `(`, `)` and `|` escaped, which picomatch would otherwise
 * pass into its regular expression as a group and an alternative.
 */
function escaped(pattern: string): string {
  let out = '';
  for (let i = 0; i < pattern.length; i++) {
    const ch = pattern.charAt(i);
    if (ch === '\\' && i + 1 < pattern.length) {
      out += ch + pattern.charAt(++i);
    } else {
      out += ch === '(' || ch === ')' || ch === '|' ? `\\${ch}` : ch;
    }
  }
  return out;
}

/** picomatch's matcher with one argument only (its second asks for a result object). */
function compiled(pattern: string, options: picomatch.PicomatchOptions): Matcher {
  const matches = picomatch(escaped(pattern), options);
  return (subject) => matches(subject);
}

/** Whether `path` (relative or absolute, `/`-separated) matches `pattern` as a whole. */
export function pathGlob(pattern: string): Matcher {
  return literal(pattern) ?? compiled(pattern, DIALECT);
}

/** Whether a name matches `pattern` as a whole; `*` spans any character, `/` included. */
export function nameGlob(pattern: string): Matcher {
  return literal(pattern) ?? compiled(pattern, NAMES);
}

/**
 * A regular expression group (no anchors, no flags) that matches what `pattern` matches as a
 * path, for a caller that embeds it in a larger expression.
 */
export function pathGlobSource(pattern: string): string {
  const plain = `(?:${pattern.replace(/[.*+?^${}()|[\]\\/]/gu, '\\$&')})`;
  if (!SYNTAX.test(pattern)) return plain;
  const source = `(?:${picomatch.parse(escaped(pattern), DIALECT).output})`;
  try {
    new RegExp(source);
    return source;
  } catch {
    // A class picomatch cannot turn into a valid expression (`[z-a]`): its own matcher then
    // takes the pattern literally, and so does this.
    return plain;
  }
}

/** Whether `pattern` has a wildcard, a class or braces (else it names one place). */
export function isGlob(pattern: string): boolean {
  return /[*?[{]/u.test(pattern);
}
