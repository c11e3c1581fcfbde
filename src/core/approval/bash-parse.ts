// The command parser of the command rules for `bash` (issue 22, point 5; issue 28, point 5): a
// command line split into its simple commands, each kept with all its words.
//
// Decisions:
// - `shell-quote` splits the line into words and operators (quotes, escapes, `&&`, `||`, `;`,
//   `|`, `&`, redirections). What it does not model is detected first and makes the command "not
//   parsed with confidence": a backtick, `$(` (quoted or not: inside single quotes it is harmless,
//   but asking costs less than guessing), `<(` / `>(`, a here-document, a line break, a control
//   character, a subshell, a compound command (`if`, `for`, `{`…: the words after the reserved
//   word are still kept, so `do rm x` is `rm x`), a command name that holds an expansion
//   (`$CMD args`, `/bin/$X`), and an output redirection to a file (`> out`; `/dev/null` and fd
//   duplications such as `2>&1` are fine).
// - A simple command keeps every word, its leading `NAME=value` assignments included (they change
//   what the command does: `LD_PRELOAD=…`, `GIT_CONFIG_*=…`), without its redirections. Its
//   subject, what a rule is matched against, is those words joined by single spaces, quotes gone.
//   A simple command that only assigns (`PATH=/x; ls`) is a command of its own.
// - Each word says what the shell will still do to it when it runs: a variable expansion
//   (`$HOME/x`: its value is known only then) and an unquoted glob or brace expansion (`*.txt`,
//   `.[e]nv`, `.e{n,}v`: the files it names are known only then). The parser marks them in the
//   text it hands `shell-quote`, which would lose the difference between quoted and unquoted.
// - The targets of redirections are kept (`< .env` reads a file) for the path checks.

import parse from 'shell-quote/parse.js';

/** One word of a simple command. */
export interface Word {
  /** As matched: quotes removed, `$NAME` for a variable expansion. */
  text: string;
  /** Holds a variable expansion. */
  expansion: boolean;
  /** Holds an unquoted glob (`*`, `?`, `[…]`) or brace expansion (`{a,b}`). */
  glob: boolean;
}

export interface SimpleCommand {
  /** Every word, the leading assignments included; redirections left out. */
  words: Word[];
  /** How many of `words` are leading `NAME=value` assignments. */
  assignments: number;
  /** The files its redirections name (`< in`, `> out`), `/dev/null` included. */
  redirects: Word[];
}

export interface ParsedCommand {
  /** The subject of each simple command (all its words joined by spaces), in order. */
  commands: string[];
  /** The simple commands themselves, in the same order. */
  simple: SimpleCommand[];
  /** Why the command is not parsed with confidence; undefined when it is. */
  problem?: string;
}

/** The subject of a simple command: its words joined by single spaces. */
export function subjectOf(words: readonly Word[]): string {
  return words.map((word) => word.text).join(' ');
}

/** A plain word (no expansion, no glob), as `text`. */
export function plainWord(text: string): Word {
  return { text, expansion: false, glob: false };
}

const SEPARATORS: ReadonlySet<string> = new Set([
  '&&',
  '||',
  ';',
  ';;',
  ';&',
  ';;&',
  '|',
  '|&',
  '&',
]);
const OUTPUT_REDIRECTS: ReadonlySet<string> = new Set(['>', '>>', '>|', '&>', '&>>', '<>']);
export const ASSIGNMENT = /^[A-Za-z_][A-Za-z0-9_]*\+?=/u;

/** Reserved words that open or close a compound command (`if`, `for`, `while`, `{ … }`…). */
const RESERVED: ReadonlySet<string> = new Set([
  'if',
  'then',
  'else',
  'elif',
  'fi',
  'do',
  'done',
  'case',
  'esac',
  'while',
  'until',
  'for',
  'select',
  'in',
  'function',
  'coproc',
  '{',
  '}',
  '[[',
  ']]',
]);

/** Marks a variable expansion in a word (around its name) and an unquoted `[` or `{`. */
const EXP = '\u0001';
const GLOB = '\u0002';
// eslint-disable-next-line no-control-regex -- the marks are control characters
const EXPANSION_MARK = /\u0001([^\u0001]*)\u0001/gu;

/** What in the raw text `shell-quote` would not see as it is. */
function rawProblem(text: string): string | undefined {
  if (text.includes('`')) return 'it has a backtick (command substitution)';
  if (text.includes('$(')) return 'it has a command substitution $(…)';
  if (/[<>]\(/u.test(text)) return 'it has a process substitution';
  if (text.includes('<<')) return 'it has a here-document';
  if (/[\n\r]/u.test(text)) return 'it spans more than one line';
  // eslint-disable-next-line no-control-regex -- control characters are what is looked for
  if (/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/u.test(text))
    return 'it has a control character';
  return undefined;
}

/**
 * `text` prepared for `shell-quote`: the file-descriptor numbers of its redirections left out
 * (`2>&1` → `>&1`: shell-quote would read `2` as a word), and each unquoted, unescaped `[` or `{`
 * (not `${`) marked, so that a glob or brace expansion can be told from quoted text.
 */
function prepare(text: string): string {
  let out = '';
  let quote: string | undefined;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charAt(i);
    if (
      quote === undefined &&
      /\d/u.test(ch) &&
      (i === 0 || /[\s;&|(]/u.test(text.charAt(i - 1)))
    ) {
      const digits = /^\d+(?=[<>])/u.exec(text.slice(i));
      if (digits !== null) {
        i += digits[0].length - 1;
        continue;
      }
    }
    if (quote === undefined && (ch === '[' || (ch === '{' && text.charAt(i - 1) !== '$'))) {
      out += GLOB;
    }
    out += ch;
    if (ch === '\\' && quote !== "'") {
      out += text.charAt(++i);
    } else if (quote === undefined && (ch === "'" || ch === '"')) {
      quote = ch;
    } else if (ch === quote) {
      quote = undefined;
    }
  }
  return out;
}

/** A word from the text `shell-quote` gave (markers in it); `globOp` for its glob tokens. */
function wordOf(raw: string, globOp: boolean): Word {
  let expansion = false;
  const unmarked = raw.replace(EXPANSION_MARK, (_all, name: string) => {
    // `"$"` alone is a dollar sign.
    if (name === '') return '$';
    expansion = true;
    return `$${name}`;
  });
  const text = unmarked.split(GLOB).join('');
  const marked = unmarked.includes(GLOB);
  const glob =
    globOp || (marked && (/\[[^\]]*\]/u.test(text) || /\{[^}]*(?:,|\.\.)[^}]*\}/u.test(text)));
  return { text, expansion, glob };
}

/** One parse under way: the commands so far, the one being read, and the first problem found. */
interface ParseState {
  commands: string[];
  simple: SimpleCommand[];
  problem: string | undefined;
  current: SimpleCommand;
  assignmentsDone: boolean;
  redirect: string | undefined;
}

/** Keeps the first problem found. */
function flag(state: ParseState, why: string): void {
  state.problem ??= why;
}

/** Ends the simple command being read (an empty one is dropped). */
function endCommand(state: ParseState): void {
  if (state.current.words.length > 0) {
    state.simple.push(state.current);
    state.commands.push(subjectOf(state.current.words));
  }
  state.current = { words: [], assignments: 0, redirects: [] };
  state.assignmentsDone = false;
}

/** The word after a redirection operator: its target (a duplicated descriptor is none). */
function takeRedirectTarget(state: ParseState, redirect: string, word: Word | undefined): void {
  const target = word ?? plainWord('');
  const dup = redirect === '>&' || redirect === '<&';
  if (!(dup && /^(?:\d+|-)$/u.test(target.text))) {
    state.current.redirects.push(target);
    const writes = OUTPUT_REDIRECTS.has(redirect) || redirect === '>&';
    if (writes && target.text !== '/dev/null') {
      flag(state, `it writes to a file (${redirect} ${target.text})`);
    }
  }
  state.redirect = undefined;
}

/** A word of the simple command being read: an assignment before its name, or one of its words. */
function takeWord(state: ParseState, word: Word): void {
  const { current } = state;
  if (!state.assignmentsDone && ASSIGNMENT.test(word.text)) {
    current.words.push(word);
    current.assignments++;
    return;
  }
  if (!state.assignmentsDone && word.expansion) {
    flag(state, `its command name holds an expansion (${word.text})`);
  }
  if (!state.assignmentsDone && !word.glob && !word.expansion) {
    // `! cmd` runs `cmd`; a reserved word opens or closes a compound command whose body's
    // commands are still matched (`do rm x` is `rm x`), but the whole is not vouched for.
    if (word.text === '!' && current.words.length === 0) return;
    if (RESERVED.has(word.text) && current.words.length === 0) {
      flag(state, `it has a compound command (${word.text})`);
      return;
    }
  }
  state.assignmentsDone = true;
  current.words.push(word);
}

/** An operator: a separator, a subshell, a substitution or a here-document ends the command. */
function takeOperator(state: ParseState, op: string): void {
  if (SEPARATORS.has(op)) {
    endCommand(state);
  } else if (op === '(' || op === ')') {
    flag(state, 'it has a subshell');
    endCommand(state);
  } else if (op === '<(' || op === '>(') {
    flag(state, 'it has a process substitution');
    endCommand(state);
  } else if (op.startsWith('<<')) {
    flag(state, 'it has a here-document');
    endCommand(state);
  } else {
    state.redirect = op;
  }
}

/** The word a `shell-quote` token stands for, if it is one. */
function tokenWord(token: unknown): Word | undefined {
  if (typeof token === 'string') return wordOf(token, false);
  if (typeof token === 'object' && token !== null && 'pattern' in token) {
    return wordOf(String(token.pattern), true);
  }
  return undefined;
}

/** Splits a command line into its simple commands (see the header for what counts). */
export function parseCommand(text: string): ParsedCommand {
  const state: ParseState = {
    commands: [],
    simple: [],
    problem: rawProblem(text),
    current: { words: [], assignments: 0, redirects: [] },
    assignmentsDone: false,
    redirect: undefined,
  };
  const { commands, simple } = state;
  if (state.problem !== undefined && /control character/u.test(state.problem)) {
    return { commands, simple, problem: state.problem };
  }
  let tokens: unknown[];
  try {
    tokens = parse(prepare(text), (key: string) => `${EXP}${key}${EXP}`);
  } catch (error) {
    return { commands, simple, problem: `it could not be parsed (${String(error)})` };
  }
  for (const token of tokens) {
    const word = tokenWord(token);
    if (state.redirect !== undefined) takeRedirectTarget(state, state.redirect, word);
    else if (word !== undefined) takeWord(state, word);
    else if (typeof token === 'object' && token !== null && !('comment' in token)) {
      takeOperator(state, String((token as { op: unknown }).op));
    }
  }
  if (state.redirect !== undefined) flag(state, `a redirection (${state.redirect}) has no target`);
  endCommand(state);
  if (commands.length === 0) flag(state, 'it has no command');
  const { problem } = state;
  return problem === undefined ? { commands, simple } : { commands, simple, problem };
}
