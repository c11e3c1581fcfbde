// A realistic large chat for benchmarks: alternating turns with prose, code fences, tool uses and
// results, thinking blocks and templates, about `bytes` long.
import * as writer from '../../src/core/chat/writer.js';

const PROSE =
  'The function reads the configuration once at start-up and caches it; later calls return the ' +
  'cached table, so a change on disk is only seen after a restart. ';

export function largeChat(bytes: number, messages: number): string[] {
  const perMessage = Math.max(200, Math.floor(bytes / messages));
  const lines: string[] = [
    '```lua',
    'recipient = "QA team"',
    '```',
    '@System:',
    'You are a careful reviewer.',
    '',
  ];
  for (let i = 0; i < messages; i++) {
    const start = lines.length;
    if (i % 2 === 0) {
      lines.push('@You:');
      if (i % 8 === 4)
        lines.push(
          ...writer.toolResult({
            id: `toolu_${String(i - 1)}`,
            output: 'src/config.lua\nsrc/init.lua',
            isError: false,
          }),
          '',
        );
      lines.push(
        `Question ${String(i)} for {{ recipient }}: look at @./src/file${String(i)}.lua please.`,
      );
    } else {
      lines.push('@Assistant:');
      if (i % 4 === 1)
        lines.push(
          ...writer.thinking({
            content: 'I should read the file first.',
            signature: { provider: 'anthropic', value: 'EqQBCkYIBxgCKkB' },
          }),
          '',
        );
    }
    const size = (): number => lines.slice(start).join('\n').length;
    for (let paragraph = 0; size() < perMessage - 200; paragraph++) {
      lines.push(PROSE + PROSE);
      if (paragraph % 3 === 2)
        lines.push('```ts', 'const x = await load("config");', 'export default x;', '```');
    }
    if (i % 8 === 3) {
      lines.push(
        '',
        ...writer.toolUse({
          name: 'read',
          id: `toolu_${String(i)}`,
          input: { path: 'src/config.lua', offset: null, limit: null },
        }),
      );
    }
    lines.push('');
  }
  return lines;
}
