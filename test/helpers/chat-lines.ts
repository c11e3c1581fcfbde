// Lines of chats that tests open: a call the model made and its placeholder, waiting; the chat
// that navigation (`gd`, `gf`, hover) is tried on.

/** A user turn, the model's call of `name` with `input`, and its result placeholder, pending. */
export function pendingCall(name: string, id: string, input: Record<string, unknown>): string[] {
  return [
    '@You:',
    'Change it.',
    '',
    '@Assistant:',
    `**Tool Use:** \`${name}\` (\`${id}\`)`,
    '',
    '```json',
    JSON.stringify(input),
    '```',
    '',
    '@You:',
    '',
    `**Tool Result:** \`${id}\``,
    '',
    '```flemma:tool status=pending',
    '```',
  ];
}

/**
 * A chat to navigate (`gd`, `gf`, hover): references, two calls, a result, and an example of a
 * result inside a fence. Line numbers (1-based) are noted where the tests use them.
 */
export const NAVIGATION_CHAT = [
  '@You:', // 1
  'Compare @./notes.md, with @../shared/style.md.', // 2
  '',
  '@Assistant:', // 4
  "I'll read both.",
  '',
  '**Tool Use:** `read` (`toolu_01Read`)', // 7
  '',
  '```json',
  '{', // 10
  '  "path": "notes.md"',
  '}',
  '```',
  '',
  '**Tool Use:** `bash` (`toolu_02Bash`)', // 15
  '',
  '```json',
  '{"command":"ls"}',
  '```',
  '',
  'An example, not a call:',
  '',
  '````markdown',
  '**Tool Result:** `toolu_01Read`', // 24: inside a fence, not a result
  '````',
  '',
  '@You:', // 27
  '**Tool Result:** `toolu_01Read`', // 28
  '',
  '```',
  'These are my notes.',
  '```',
  '',
];

/** A chat whose JSON frontmatter is the one line `json`, then the messages `lines`. */
export function jsonChat(json: string, lines: string[]): string[] {
  return ['```json', json, '```', ...lines];
}

/** The lines of the model's call of `name` (id `id`) with `input` (JSON text, `{}` by default). */
export function toolUse(name: string, id: string, input = '{}'): string[] {
  return [`**Tool Use:** \`${name}\` (\`${id}\`)`, '', '```json', input, '```'];
}

/** A call of `bash` (`t1`, input `{}`) and, in the next `@You:`, its result `ok`: no blank lines. */
export const BASH_ROUND = [
  '**Tool Use:** `bash` (`t1`)',
  '```json',
  '{}',
  '```',
  '@You:',
  '**Tool Result:** `t1`',
  '```',
  'ok',
  '```',
];

/** A call of the model: the tool's name, the call's id and its input (JSON text, `{}` if none). */
export type Call = [name: string, id: string, input?: string];

/**
 * A chat where the user asks `question` and the model answers with `calls`, a blank line between
 * them; with `status`, the user's turn that follows holds a result placeholder per call, in
 * order, its fence saying that status (`approved`, `pending`, …).
 */
export function callChat(question: string, calls: Call[], status?: string): string[] {
  const between = <T>(blocks: T[][], gap: T): T[] =>
    blocks.flatMap((block, index) => (index === 0 ? block : [gap, ...block]));
  const uses = between(
    calls.map(([name, id, input]) => toolUse(name, id, input)),
    '',
  );
  const results = between(
    calls.map(([, id]) => placeholder(id, status ?? '')),
    '',
  );
  return [
    '@You:',
    question,
    '',
    '@Assistant:',
    ...uses,
    ...(status === undefined ? [] : ['', '@You:', '', ...results]),
  ];
}

/** A result placeholder of the call `id`: its header and an empty fence saying `status`. */
export function placeholder(id: string, status: string): string[] {
  return [`**Tool Result:** \`${id}\``, '', `\`\`\`flemma:tool status=${status}`, '```'];
}

/** A result as Flemma writes it: the header of `id` (marked ` (error)` with `error`), the output. */
export function toolResult(id: string, output: string[], error = false): string[] {
  return [`**Tool Result:** \`${id}\`${error ? ' (error)' : ''}`, '', '```', ...output, '```'];
}

/** The 1-based line number of the fence of the result block of `id` in `lines`. */
export function fenceLineOf(lines: string[], id: string): number {
  const header = lines.indexOf(`**Tool Result:** \`${id}\``);
  if (header < 0) throw new Error(`no result block for ${id}`);
  return header + 3;
}
