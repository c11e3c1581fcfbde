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
