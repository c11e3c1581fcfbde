// Command-level rules for `bash` (issue 22, point 5; issue 28, point 5): `tools.bash.allow` and
// `tools.bash.deny`, patterns matched against each simple command of the command line the model
// asked to run. The parser is bash-parse.ts, what a command runs besides itself bash-inner.ts,
// the paths it names bash-paths.ts.
//
// Decisions, including where the issues are silent:
// - Subject: all the words of one simple command, its leading `NAME=value` assignments included,
//   redirections removed, joined by single spaces (`FOO=1 ls  -la 2>/dev/null` → `FOO=1 ls -la`).
//   Quotes are gone: `grep "a b"` is `grep a b`. A pattern is the project's glob dialect over
//   names (src/core/util/glob.ts, `nameGlob`), where `*` spans any characters, spaces included.
//   A pattern ending in ` *` also matches the command alone (`ls *` matches `ls`).
// - Allow: the whole subject must match, so a leading assignment or a prefix (`env`, `sudo`,
//   `nice`, `sh -c`…) must itself be allowed (`LD_PRELOAD=x ls` does not match `ls *`; `FOO=1
//   make*` or `env *` allow them by name). The call is approved only when it parses with
//   confidence, every simple command matches some allow rule (`ls && rm -rf ~` does not match
//   `ls *`), no deny rule matches, the command runs in the project (the same working-directory
//   rule as the sandbox resolver), and the paths it names (bash-paths.ts) touch no sensitive
//   place and, unless the sandbox is on, lie in the project.
// - Deny: a call with a simple command whose any form (bash-inner.ts: without assignments, without
//   the name's directory, `git` without global options, what it runs through a prefix, `sh -c`,
//   `find -exec`) matches a deny rule, or a command `DENY_ALIKE` lists for the rule's command
//   name (`unlink` for `rm *`), is never approved automatically, whichever resolver approved it
//   (a guard after the chain, like the sensitive-place guard): it asks. An allow rule takes names
//   as written (`./ls` is not `ls`). When deny rules exist, a command that does not parse with
//   confidence, or that runs what the rules cannot follow (a prefix, a shell, an interpreter
//   given code, `find -exec`, `git -c`, `PATH=…`), asks too. Denials by other resolvers stand.

import { type ApprovalResult, type Note, type ToolCall, guarded } from './chain.js';
import type { ApprovalContext, ApprovalResolver } from './resolvers.js';
import { commandScopeProblem } from './scope.js';
import { nameGlob } from '../util/glob.js';
import { type ParsedCommand, parseCommand } from './bash-parse.js';
import { allForms, alikeOf, unseenIn } from './bash-inner.js';
import { commandPaths } from './bash-paths.js';

export { parseCommand, type ParsedCommand } from './bash-parse.js';

export const BASH_RULES_RESOLVER = 'urn:flemma:approval:bash-rules';
export const BASH_DENY_GUARD = 'urn:flemma:approval:bash-deny';
/** Above third-party resolvers (50) and the sandbox (25), below the buffer's own list (90). */
export const BASH_RULES_PRIORITY = 80;

export interface BashRules {
  allow: string[];
  deny: string[];
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

/** A deny rule's hit: the rule, the simple command, and what matched when not the command itself. */
export interface DenyHit {
  rule: string;
  command: string;
  /** The command it runs (`rm x` for `sudo rm x`), or the job it does (`rm`), when one matched. */
  via?: { inner: string } | { alike: string; pattern: string };
}

/** The first simple command that matches a deny rule (see the header), with the rule. */
export function denyMatch(rules: BashRules, parsed: ParsedCommand): DenyHit | undefined {
  if (rules.deny.length === 0) return undefined;
  const alike = new Map(rules.deny.map((rule) => [rule, alikeOf(rule)]));
  for (const [index, simple] of parsed.simple.entries()) {
    const command = parsed.commands[index] ?? '';
    const forms = allForms(simple);
    for (const rule of rules.deny) {
      const own = forms.find((form) => commandMatches(rule, form.text));
      if (own !== undefined) {
        return own.inner ? { rule, command, via: { inner: own.text } } : { rule, command };
      }
      for (const { name, pattern } of alike.get(rule) ?? []) {
        const same = forms.find((form) => commandMatches(pattern, form.text));
        if (same !== undefined) return { rule, command, via: { alike: name, pattern } };
      }
    }
  }
  return undefined;
}

/** What `:Flemma tool:why` says of a deny hit. */
export function describeDenyHit(hit: DenyHit): string {
  const rule = `the deny rule "${hit.rule}" (tools.bash.deny)`;
  if (hit.via === undefined) return `\`${hit.command}\` matches ${rule}`;
  if ('inner' in hit.via)
    return `\`${hit.command}\` runs \`${hit.via.inner}\`, which matches ${rule}`;
  return `\`${hit.command}\` does the job of \`${hit.via.alike}\` (\`${hit.via.pattern}\`), so it matches ${rule}`;
}

/** Why a command with no deny match still cannot be cleared of the deny rules; undefined if it can. */
function uncheckable(parsed: ParsedCommand): string | undefined {
  if (parsed.problem !== undefined) return `it cannot be parsed with confidence: ${parsed.problem}`;
  return unseenIn(parsed);
}

/**
 * The allow rule of each simple command when every one has one and the command parses with
 * confidence; otherwise why not. Each subject is matched whole, its assignments and prefixes
 * included.
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

/**
 * Why the paths a command names keep an allow rule from approving it; undefined when they do not.
 * `sandboxed` is asked only when a path lies outside the project or is not known.
 */
async function pathsProblem(
  parsed: ParsedCommand,
  context: ApprovalContext,
  sandboxed: () => boolean | Promise<boolean>,
): Promise<string | undefined> {
  const findings = commandPaths(parsed, context.scope);
  if (findings === undefined) return 'the paths the command names cannot be checked here';
  const sensitive = findings.find((finding) => finding.kind === 'sensitive');
  if (sensitive !== undefined) {
    return `${sensitive.why}: a command that names one is never approved by tools.bash.allow`;
  }
  const doubt = findings[0];
  if (doubt === undefined || (await sandboxed())) return undefined;
  return `${doubt.why}: without the sandbox, tools.bash.allow approves only commands whose paths lie in the project`;
}

/**
 * `urn:flemma:approval:bash-rules`: approves a `bash` call whose every command is allowed and
 * whose paths pass. `sandboxActive` says whether the sandbox will wrap the command (it bounds
 * where a command writes, so paths outside the project are then left to it).
 */
export function bashRulesResolver(
  rules: BashRules,
  isBash: (toolName: string) => boolean,
  sandboxActive?: (bufnr: number) => boolean | Promise<boolean>,
): ApprovalResolver {
  return {
    priority: BASH_RULES_PRIORITY,
    description: 'tools.bash.allow: bash commands approved by pattern',
    resolve: async (call: ToolCall, context: ApprovalContext, note: Note) => {
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
      const paths = await pathsProblem(parsed, context, () =>
        sandboxActive === undefined ? false : sandboxActive(call.bufnr),
      );
      if (paths !== undefined) {
        note(`not allowed: ${paths}`);
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
  const matched = hit === undefined ? undefined : describeDenyHit(hit);
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
  return guarded(
    result,
    BASH_DENY_GUARD,
    (approver) =>
      `${why}: ${approver} approved it, but a denied command is never approved automatically`,
  );
}
