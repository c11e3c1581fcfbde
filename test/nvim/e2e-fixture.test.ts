// The end-to-end fixture itself (docs/testing.md, "Writing an end-to-end test"): one call gives a
// project, Neovim set up against the fake provider and an open chat; the session's verbs drive a
// tool round as a user does; thinking and text in several chunks reach the chat.
import { describe, expect, it } from 'vitest';
import { lastUserContent } from '../helpers/anthropic-script.js';
import { ECHO_TOOL, withDriver } from '../helpers/e2e.js';

describe('the e2e fixture', () => {
  it('runs an approved call and sends its result back', async () => {
    await withDriver(
      {
        config: '{ tools = { auto_approve = { "echo_tool" } } }',
        lua: ECHO_TOOL,
        files: { 'notes.txt': 'remember the milk\n' },
        chat: ['@You:', 'Echo hi.'],
      },
      async (t) => {
        const first = await t.send();
        expect(lastUserContent(first)).toEqual([{ type: 'text', text: 'Echo hi.' }]);
        await t.reply('Echoing.', [{ id: 'toolu_1', name: 'echo_tool', input: { text: 'hi' } }]);
        await t.toolResult('toolu_1');
        const follow = await t.request();
        expect(lastUserContent(follow)).toEqual([
          expect.objectContaining({ type: 'tool_result', tool_use_id: 'toolu_1' }),
        ]);
        expect(JSON.stringify(lastUserContent(follow))).toContain('echo: hi');
        expect(t.f.requests).toHaveLength(2);
      },
    );
  });

  it('writes thinking and text sent in several chunks', async () => {
    await withDriver({ config: '{}', chat: ['@You:', 'Think.'] }, async (t) => {
      const after = t.d.eventCount;
      await t.send();
      await t.replyBlocks([
        { kind: 'thinking', text: 'Let me see.', signature: 'sig-1' },
        { kind: 'text', deltas: ['Hel', 'lo ', 'there.'] },
      ]);
      await t.d.waitForEvent('FlemmaRequestFinished', { after });
      const lines = await t.lines();
      expect(lines).toContain('Hello there.');
      expect(lines.join('\n')).toContain('Let me see.');
      expect(lines.slice(-2)).toEqual(['@You:', '']);
    });
  });
});
