// `:Flemma status` and `:Flemma tool:why` show the approval policy the buffer really uses: the
// configuration's `tools.auto_approve` with the frontmatter's operations applied, where each part
// came from, what a preset expands to, the resolvers the frontmatter's own list puts aside, and
// the model a request would use (docs/approval.md, "What status and why show").
import { describe, expect, it } from 'vitest';
import { type Session, launcher, statusLines } from '../helpers/e2e.js';

const launch = launcher();

/** A chat opened and trusted (its frontmatter runs), once the host has booted it. */
async function trusted(name: string, lines: string[]): Promise<Session> {
  const t = await launch({
    key: 'sk-ant-test-key',
    config: '{}',
    chat: { name, lines, boot: false },
  });
  await t.d.command('trust');
  await t.d.waitForEvent('FlemmaBootComplete');
  return t;
}

describe('the approval policy the buffer uses', () => {
  it(':Flemma status shows the merged list with its origins, and the model in use', async () => {
    const { d } = await trusted('edited.chat', [
      '```lua',
      'flemma.opt.tools.auto_approve:append("bash")',
      'flemma.opt.tools.auto_approve:remove("write")',
      '```',
      '@You:',
      'Hello',
    ]);
    const lines = await statusLines(d);
    expect(lines).toContain('model: "claude-sonnet-4-6"  (the provider\'s default)');
    expect(lines).toContain('  tools.auto_approve: ["$default","bash"]');
    expect(lines).toContain('    $default  (default) = read, ls, grep, find, edit');
    expect(lines).toContain('    bash  (frontmatter line 2)');
    expect(lines).toContain('    removed: write  (frontmatter line 3)');
    expect(lines.some((line) => line.includes('the frontmatter edits the list'))).toBe(true);
  });

  it(':Flemma tool:why says the frontmatter list put the config and sandbox resolvers aside', async () => {
    const t = await trusted('assigned.chat', [
      '```lua',
      'flemma.opt.tools.auto_approve = { "read" }',
      '```',
      '@You:',
      'List the files.',
    ]);
    const { d } = t;
    await t.send('G<C-]>');
    await t.reply('Listing.', [{ id: 'toolu_B', name: 'bash', input: { command: 'ls' } }]);
    await d.waitForEvent('FlemmaApprovalNeeded');
    const lines = await d.lines();
    await d.command(`call cursor(${String(lines.indexOf('**Tool Result:** `toolu_B`') + 1)}, 1)`);
    const seen = d.notificationCount;
    await d.command('Flemma tool:why');
    const note = await d.waitForNotification(/bash \(toolu_B\)/, { after: seen });
    expect(note.message).toContain('no resolver decided');
    expect(note.message).toContain('    read  (frontmatter line 2)');
    expect(note.message).toContain(
      'the frontmatter assigns its own list: urn:flemma:approval:frontmatter decides, in place of urn:flemma:approval:config (tools.auto_approve of default) and urn:flemma:approval:sandbox (sandboxed tools)',
    );
    expect(note.message).toContain('model: claude-sonnet-4-6');
  });
});
