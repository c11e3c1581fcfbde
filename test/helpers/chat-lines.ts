// Lines of chats that tests open: a call the model made and its placeholder, waiting.

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
