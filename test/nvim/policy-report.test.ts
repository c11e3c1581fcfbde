// `:Flemma status` and `:Flemma tool:why` show the approval policy the buffer really uses: the
// configuration's `tools.auto_approve` with the frontmatter's operations applied, where each part
// came from, what a preset expands to, the resolvers the frontmatter's own list puts aside, and
// the model a request would use (docs/approval.md, "What status and why show").
import { afterEach, describe, expect, it } from 'vitest';
import { anthropicReply } from '../helpers/anthropic-script.js';
import { type Driver, startDriver } from '../helpers/driver.js';
import { type FakeProvider, startFakeProvider } from '../helpers/fake-provider.js';

let driver: Driver | undefined;
let fake: FakeProvider | undefined;

afterEach(async () => {
  await driver?.quit();
  await fake?.close();
  driver = undefined;
  fake = undefined;
});

async function start(): Promise<{ d: Driver; f: FakeProvider }> {
  fake = await startFakeProvider();
  driver = await startDriver({
    env: { ANTHROPIC_API_KEY: 'sk-ant-test-key', ANTHROPIC_BASE_URL: fake.url },
    setup: 'require("flemma").setup({})',
  });
  return { d: driver, f: fake };
}

async function statusLines(d: Driver): Promise<string[]> {
  await d.command('Flemma status');
  await d.waitUntil(
    'local b = vim.fn.bufnr("flemma://status") return b ~= -1 and vim.api.nvim_buf_line_count(b) > 1',
  );
  return d.lua<string[]>(
    'return vim.api.nvim_buf_get_lines(vim.fn.bufnr("flemma://status"), 0, -1, false)',
  );
}

describe('the approval policy the buffer uses', () => {
  it(':Flemma status shows the merged list with its origins, and the model in use', async () => {
    const { d } = await start();
    await d.openChat('edited.chat', [
      '```lua',
      'flemma.opt.tools.auto_approve:append("bash")',
      'flemma.opt.tools.auto_approve:remove("write")',
      '```',
      '@You:',
      'Hello',
    ]);
    await d.command('trust');
    await d.waitForEvent('FlemmaBootComplete');
    const lines = await statusLines(d);
    expect(lines).toContain('model: "claude-sonnet-4-6"  (the provider\'s default)');
    expect(lines).toContain('  tools.auto_approve: ["$default","bash"]');
    expect(lines).toContain('    $default  (default) = read, ls, grep, find, edit');
    expect(lines).toContain('    bash  (frontmatter line 2)');
    expect(lines).toContain('    removed: write  (frontmatter line 3)');
    expect(lines.some((line) => line.includes('the frontmatter edits the list'))).toBe(true);
  });

  it(':Flemma tool:why says the frontmatter list put the config and sandbox resolvers aside', async () => {
    const { d, f } = await start();
    await d.openChat('assigned.chat', [
      '```lua',
      'flemma.opt.tools.auto_approve = { "read" }',
      '```',
      '@You:',
      'List the files.',
    ]);
    await d.command('trust');
    await d.waitForEvent('FlemmaBootComplete');
    await d.press('G<C-]>');
    await anthropicReply(await f.nextRequest({ path: '/v1/messages' }), 'Listing.', [
      { id: 'toolu_B', name: 'bash', input: { command: 'ls' } },
    ]);
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
