// Command-level rules for `bash` (issue 22, point 5): `tools.bash.allow` and `tools.bash.deny`,
// patterns matched against each simple command of the command line the model asked to run.
//
// Decisions, including where the issue is silent:
// - Parsing: `shell-quote` splits the line into words and operators (quotes, escapes, `&&`, `||`,
//   `;`, `|`, `&`, redirections). What it does not model is detected first and makes the command
//   "not parsed with confidence": a backtick, `$(` (command substitution, quoted or not: inside
//   single quotes it is harmless, but asking costs less than guessing), `<(` / `>(` (process
//   substitution), a here-document (`<<`), a line break (another command), a subshell (`(`,
//   `)`), a compound command (a reserved word such as `if`, `for`, `do`, `{` where a command
//   starts; the words after it are still matched, so `do rm x` is `rm x`), a command name that
//   is an expansion (`$CMD args`), and output redirections to a file (`> out`, `>> log`,
//   `&> f`; `/dev/null` and fd duplications such as `2>&1` are fine; the fd number before a
//   redirection is not a word). Such a command is never approved by an allow rule.
// - Subject: the words of one simple command, with its leading `NAME=value` assignments left out
//   and redirections removed, joined by single spaces (`FOO=1 ls  -la 2>/dev/null` → `ls -la`).
//   Quotes are gone: `grep "a b"` is `grep a b`. A pattern is the project's glob dialect over
//   names (src/core/util/glob.ts, `nameGlob`), where `*` spans any characters, spaces included.
//   A pattern ending in ` *` also matches the command alone (`ls *` matches `ls`).
// - Allow: the call is approved only when it parses with confidence and every simple command of
//   it matches some allow rule (`ls && rm -rf ~` does not match `ls *`), and the command runs
//   in the project (the same working-directory rule as the sandbox resolver).
// - Deny: a call with a simple command that matches a deny rule is never approved automatically,
//   whichever resolver approved it (a guard after the chain, like the sensitive-place guard): it
//   asks. A deny rule also matches the command with its name's directory left out (`/bin/rm` is
//   `rm`); an allow rule does not (`./ls` is not `ls`). When deny rules exist, a command that does not parse with confidence, or that runs
//   another command through a wrapper (`sh -c`, `eval`, `xargs`, `sudo`, `find -exec`…), asks
//   too: what it runs cannot be checked against them. Denials by other resolvers stand.

import parse from 'shell-quote/parse.js';
import type { ApprovalResult, Note, ToolCall } from './chain.js';
import type { ApprovalContext, ApprovalResolver } from './resolvers.js';
import { commandScopeProblem } from './scope.js';
import { nameGlob } from '../util/glob.js';

export const BASH_RULES_RESOLVER = 'urn:flemma:approval:bash-rules';
export const BASH_DENY_GUARD = 'urn:flemma:approval:bash-deny';
/** Above third-party resolvers (50) and the sandbox (25), below the buffer's own list (90). */
export const BASH_RULES_PRIORITY = 80;

export interface ParsedCommand {
  /** The subject of each simple command (words joined by spaces), in order. */
  commands: string[];
  /** Why the command is not parsed with confidence; undefined when it is. */
  problem?: string;
}

export interface BashRules {
  allow: string[];
  deny: string[];
}

/** Commands that run other commands given as their arguments. */
const WRAPPERS: ReadonlySet<string> = new Set([
  'sh',
  'bash',
  'zsh',
  'dash',
  'ksh',
  'fish',
  'eval',
  'exec',
  'source',
  '.',
  'xargs',
  'sudo',
  'doas',
  'su',
  'env',
  'nohup',
  'nice',
  'time',
  'timeout',
  'watch',
  'command',
  'builtin',
  'parallel',
]);

/** Options of `find` and `fd` that run a command for each file found. */
const EXEC_OPTIONS = /^(?:-exec|-execdir|-ok|-okdir|-x|-X|--exec|--exec-batch)$/u;

/** Whether a simple command runs other commands given as its arguments. */
function runsOthers(command: string): boolean {
  const words = command.split(' ');
  const name = words[0] ?? '';
  if (WRAPPERS.has(name)) return true;
  return (name === 'find' || name === 'fd') && words.some((word) => EXEC_OPTIONS.test(word));
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
const ASSIGNMENT = /^[A-Za-z_][A-Za-z0-9_]*=/u;

/** A variable expansion, kept as a marker so that a command name made of one can be told. */
interface Expansion {
  expansion: string;
}

function isExpansion(token: unknown): token is Expansion {
  return typeof token === 'object' && token !== null && 'expansion' in token;
}

/** What in the raw text `shell-quote` would not see as it is. */
function rawProblem(text: string): string | undefined {
  if (text.includes('`')) return 'it has a backtick (command substitution)';
  if (text.includes('$(')) return 'it has a command substitution $(…)';
  if (/[<>]\(/u.test(text)) return 'it has a process substitution';
  if (text.includes('<<')) return 'it has a here-document';
  if (/[\n\r]/u.test(text)) return 'it spans more than one line';
  return undefined;
}

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

/**
 * `text` without the file-descriptor numbers of its redirections (`2>&1` → `>&1`), which
 * shell-quote would read as a word of the command. Quotes are followed so that a quoted `2>` stays.
 */
function dropFdNumbers(text: string): string {
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

/** Splits a command line into its simple commands (see the header for what counts). */
export function parseCommand(text: string): ParsedCommand {
  const early = rawProblem(text);
  const commands: string[] = [];
  let problem = early;
  let words: string[] = [];
  let assignmentsDone = false;
  let redirect: string | undefined;
  const end = (): void => {
    if (words.length > 0) commands.push(words.join(' '));
    words = [];
    assignmentsDone = false;
  };
  const flag = (why: string): void => {
    problem ??= why;
  };
  let tokens: unknown[];
  try {
    tokens = parse(dropFdNumbers(text), (key: string) => ({ expansion: `$${key}` }));
  } catch (error) {
    return { commands: [], problem: `it could not be parsed (${String(error)})` };
  }
  for (const token of tokens) {
    if (redirect !== undefined) {
      const target = typeof token === 'string' ? token : isExpansion(token) ? token.expansion : '';
      const dup = redirect === '>&' || redirect === '<&';
      if (OUTPUT_REDIRECTS.has(redirect) || (dup && !/^(?:\d+|-)$/u.test(target))) {
        if (target !== '/dev/null') flag(`it writes to a file (${redirect} ${target})`);
      }
      redirect = undefined;
      continue;
    }
    if (typeof token === 'string' || isExpansion(token)) {
      const word = typeof token === 'string' ? token : token.expansion;
      if (!assignmentsDone && typeof token === 'string' && ASSIGNMENT.test(word)) continue;
      if (!assignmentsDone && isExpansion(token))
        flag(`its command name is an expansion (${word})`);
      if (!assignmentsDone && typeof token === 'string') {
        // `! cmd` runs `cmd`; a reserved word opens or closes a compound command whose body's
        // commands are still matched (`do rm x` is `rm x`), but the whole is not vouched for.
        if (word === '!') continue;
        if (RESERVED.has(word)) {
          flag(`it has a compound command (${word})`);
          continue;
        }
      }
      assignmentsDone = true;
      words.push(word);
      continue;
    }
    if (typeof token !== 'object' || token === null) continue;
    if ('comment' in token) continue;
    if ('pattern' in token) {
      words.push(String(token.pattern));
      assignmentsDone = true;
      continue;
    }
    const op = String((token as { op: unknown }).op);
    if (SEPARATORS.has(op)) {
      end();
    } else if (op === '(' || op === ')') {
      flag('it has a subshell');
      end();
    } else if (op === '<(' || op === '>(') {
      flag('it has a process substitution');
      end();
    } else if (op.startsWith('<<')) {
      flag('it has a here-document');
      end();
    } else {
      redirect = op;
    }
  }
  if (redirect !== undefined) flag(`a redirection (${redirect}) has no target`);
  end();
  if (commands.length === 0) flag('it has no command');
  return problem === undefined ? { commands } : { commands, problem };
}

/** Whether `subject` (one simple command) matches `pattern`. */
export function commandMatches(pattern: string, subject: string): boolean {
  const trimmed = pattern.trim().replace(/\s+/gu, ' ');
  if (trimmed === '') return false;
  if (nameGlob(trimmed)(subject)) return true;
  return trimmed.endsWith(' *') && nameGlob(trimmed.slice(0, -2))(subject);
}

/** The rules of a `tools` snapshot (`tools.bash.allow` / `tools.bash.deny`); junk is ignored. */
export function bashRules(tools: Record<string, unknown> | undefined): BashRules {
  const bash = tools?.['bash'];
  const section =
    bash !== null && typeof bash === 'object' ? (bash as Record<string, unknown>) : {};
  const list = (value: unknown): string[] =>
    Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string') : [];
  return { allow: list(section['allow']), deny: list(section['deny']) };
}

/** The command line of a `bash` call, or undefined when the input has none. */
export function commandOf(input: unknown): string | undefined {
  if (input === null || typeof input !== 'object') return undefined;
  const command = (input as Record<string, unknown>)['command'];
  return typeof command === 'string' ? command : undefined;
}

/** The first simple command that matches a deny rule, with the rule. */
export function denyMatch(
  rules: BashRules,
  parsed: ParsedCommand,
): { rule: string; command: string } | undefined {
  for (const command of parsed.commands) {
    // `/bin/rm -rf ~` is `rm -rf ~` to a deny rule (an allow rule takes names as written).
    const short = command.replace(/^[^ ]*\//u, '');
    const rule = rules.deny.find(
      (pattern) => commandMatches(pattern, command) || commandMatches(pattern, short),
    );
    if (rule !== undefined) return { rule, command };
  }
  return undefined;
}

/** Why a command with no deny match still cannot be cleared of the deny rules; undefined if it can. */
function uncheckable(parsed: ParsedCommand): string | undefined {
  if (parsed.problem !== undefined) return `it cannot be parsed with confidence: ${parsed.problem}`;
  const wrapped = parsed.commands.find(runsOthers);
  if (wrapped !== undefined) return `\`${wrapped}\` may run other commands`;
  return undefined;
}

/**
 * The allow rule of each simple command when every one has one and the command parses with
 * confidence; otherwise why not.
 */
export function allowMatch(
  rules: BashRules,
  parsed: ParsedCommand,
): { rules: string[] } | { why: string } {
  if (parsed.problem !== undefined)
    return { why: `it cannot be parsed with confidence: ${parsed.problem}` };
  const found: string[] = [];
  for (const command of parsed.commands) {
    const rule = rules.allow.find((pattern) => commandMatches(pattern, command));
    if (rule === undefined) return { why: `\`${command}\` matches no allow rule` };
    found.push(rule);
  }
  return { rules: found };
}

/** `urn:flemma:approval:bash-rules`: approves a `bash` call whose every command is allowed. */
export function bashRulesResolver(
  rules: BashRules,
  isBash: (toolName: string) => boolean,
): ApprovalResolver {
  return {
    priority: BASH_RULES_PRIORITY,
    description: 'tools.bash.allow: bash commands approved by pattern',
    resolve: (call: ToolCall, context: ApprovalContext, note: Note) => {
      if (rules.allow.length === 0 || !isBash(call.toolName)) return undefined;
      const command = commandOf(call.input);
      if (command === undefined) return undefined;
      const parsed = parseCommand(command);
      if (denyMatch(rules, parsed) !== undefined) return undefined;
      const match = allowMatch(rules, parsed);
      if ('why' in match) {
        note(`not allowed: ${match.why}`);
        return undefined;
      }
      const problem = commandScopeProblem(context.scope, call.toolName);
      if (problem !== undefined) {
        note(problem);
        return undefined;
      }
      const unique = [...new Set(match.rules)].map((rule) => `"${rule}"`);
      note(`allowed by tools.bash.allow ${unique.join(', ')}`);
      return 'approve';
    },
  };
}

/**
 * `result` with an approval of a `bash` call that a deny rule matches (or that the deny rules
 * cannot be checked against) turned into a question, as decided by `urn:flemma:approval:bash-deny`.
 */
export function guardBashDeny(
  result: ApprovalResult,
  call: ToolCall,
  rules: BashRules,
  isBash: boolean,
): ApprovalResult {
  if (result.decision === 'deny' || !isBash || rules.deny.length === 0) return result;
  const parsed = parseCommand(commandOf(call.input) ?? '');
  const hit = denyMatch(rules, parsed);
  const matched =
    hit === undefined
      ? undefined
      : `\`${hit.command}\` matches the deny rule "${hit.rule}" (tools.bash.deny)`;
  if (result.decision === 'require_approval') {
    // Nothing to undo, but `:Flemma tool:why` still names the rule.
    if (matched === undefined) return result;
    const step = { resolver: BASH_DENY_GUARD, priority: Number.NEGATIVE_INFINITY };
    return {
      ...result,
      trace: [...result.trace, { ...step, outcome: 'passed', notes: [matched] }],
    };
  }
  const reason = matched === undefined ? uncheckable(parsed) : undefined;
  if (matched === undefined && reason === undefined) return result;
  const why = matched ?? `tools.bash.deny cannot be checked: ${reason ?? ''}`;
  const approver = result.resolver ?? 'the default';
  return {
    decision: 'require_approval',
    resolver: BASH_DENY_GUARD,
    trace: [
      ...result.trace,
      {
        resolver: BASH_DENY_GUARD,
        // After every resolver of the chain.
        priority: Number.NEGATIVE_INFINITY,
        outcome: 'decided',
        decision: 'require_approval',
        notes: [
          `${why}: ${approver} approved it, but a denied command is never approved automatically`,
        ],
      },
    ],
    skipped: result.skipped,
  };
}
