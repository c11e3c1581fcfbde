// The message budget of one step of the tool loop (docs/architecture.md, "The message budget"),
// counted on the wire for 8 `read` calls the default policy approves: autopilot's step after the
// reply that asked for them, and the user's `<C-]>` on them once approved. The host's wire trace
// (`FLEMMA_TRACE`, src/editor/trace.ts) marks every host → Lua call (`wire:call`), its answer
// (`wire:answer`), every batch of notifications (`wire:notify`) and every Lua → host message
// (`wire:in`). The step asks Neovim nothing before its calls start, and from the last call's
// return to the follow-up leaving at most one round trip completes (the results' write).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { anthropicReply } from '../helpers/anthropic-script.js';
import { type Driver } from '../helpers/driver.js';
import { launcher } from '../helpers/e2e.js';
import { tempDirs } from '../helpers/temp.js';
import { type FakeProvider } from '../helpers/fake-provider.js';

const temp = tempDirs();
const launch = launcher();

/** The trace's labels in order (each line is `<ms> <label>`). */
function labels(file: string): string[] {
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => line.slice(line.indexOf(' ') + 1));
}

interface Budget {
  /**
   * Host → Lua calls made from the end of the reply until the calls were handed to the executor
   * (but `chat.structure`).
   */
  beforeCalls: string[];
  /**
   * Round trips (call and answer) from the last call's return until the follow-up left, but the
   * document store's `chat.structure` (marks and diagnostics), which the loop does not wait for.
   */
  afterCalls: string[];
  /** Every host → Lua call of the step. */
  calls: string[];
  /** Wire messages of the step: calls, answers, notification batches, Lua → host messages. */
  messages: number;
}

/** The document store's publish of marks and diagnostics, which the loop does not wait for. */
const STRUCTURE = 'chat.structure';

const called = (labels: string[]): string[] =>
  labels.filter((label) => label.startsWith('wire:call ')).map((label) => label.slice(10));

/** Round trips both asked and answered within `labels`. */
function roundTrips(labels: string[]): string[] {
  const open: string[] = [];
  const done: string[] = [];
  for (const label of labels) {
    if (label.startsWith('wire:call ')) open.push(label.slice(10));
    const answered = label.startsWith('wire:answer ') ? label.slice(12) : undefined;
    const index = answered === undefined ? -1 : open.indexOf(answered);
    if (index >= 0) done.push(...open.splice(index, 1));
  }
  return done;
}

/**
 * The step: from the reply being in the buffer (`send:finished`) to the follow-up leaving
 * (`send:http`: the request handed to the provider's client); the calls start when the step
 * hands them to the executor (`tools:dispatch`), and the last of them returns at `tool:done`.
 */
function budget(trace: string[], from = 'send:finished'): Budget {
  const start = trace.indexOf(from);
  const end = trace.findIndex((label, i) => i > start && label === 'send:http');
  expect(start).toBeGreaterThanOrEqual(0);
  expect(end).toBeGreaterThan(start);
  const step = trace.slice(start, end);
  const dispatched = step.indexOf('tools:dispatch');
  expect(dispatched).toBeGreaterThan(0);
  const returned = step.map((label) => label.startsWith('tool:done ')).lastIndexOf(true);
  expect(returned).toBeGreaterThan(dispatched);
  return {
    beforeCalls: called(step.slice(0, dispatched)).filter((method) => method !== STRUCTURE),
    afterCalls: roundTrips(step.slice(returned)).filter((method) => method !== STRUCTURE),
    calls: called(step),
    messages: step.filter((label) => /^wire:(call|answer|notify|in) /.test(label)).length,
  };
}

/** The host's writes into Neovim, which ask nothing. */
const WRITES = ['buffer.apply_batch', 'chat.structure'];

/** A Neovim whose host traces the wire, with 8 small files to read; the trace's path. */
async function start(): Promise<{ d: Driver; f: FakeProvider; file: string }> {
  const dir = temp('flemma-wire-');
  const file = join(dir, 'trace.log');
  const { d, f } = await launch({ key: 'sk-test', env: { FLEMMA_TRACE: file }, config: '{}' });
  for (let i = 1; i <= 8; i++) d.writeFile(`file${String(i)}.txt`, `file ${String(i)}\n`);
  return { d, f, file };
}

/** The reply asks for 8 reads: autopilot's step places, runs and sends them. */
async function measure(): Promise<Budget> {
  const { d: driver, f: fake, file } = await start();
  await driver.openChat('wire.chat', ['@You:', 'Read the files.']);
  await driver.waitForEvent('FlemmaBootComplete', { timeout: 20000 });
  await driver.press('<C-]>');
  const calls = Array.from({ length: 8 }, (_, i) => ({
    id: `toolu_w${String(i)}`,
    name: 'read',
    input: { label: 'file', path: `file${String(i + 1)}.txt` },
  }));
  await anthropicReply(await fake.nextRequest({ path: /^\/v1\/messages/ }), '', calls);
  const follow = await fake.nextRequest({ path: /^\/v1\/messages/, timeout: 20000 });
  await anthropicReply(follow, 'ok');
  while (driver.eventsSeen('FlemmaRequestFinished').length < 2) {
    await driver.waitForEvent('FlemmaRequestFinished', { after: driver.eventCount });
  }
  return budget(labels(file));
}

/** A chat written here (so trusted) whose last `@You:` holds the 8 reads' placeholders. */
function waitingChat(status: string): string[] {
  const lines = ['@You:', 'Read the files.', '', '@Assistant:', ''];
  const ids = Array.from({ length: 8 }, (_, i) => `toolu_u${String(i)}`);
  ids.forEach((id, i) => {
    const input = { label: 'file', path: `file${String(i + 1)}.txt`, offset: null, limit: null };
    lines.push(`**Tool Use:** \`read\` (\`${id}\`)`, '', '```json', JSON.stringify(input));
    lines.push('```', '');
  });
  lines.push('@You:');
  for (const id of ids) {
    lines.push(`**Tool Result:** \`${id}\``, '', `\`\`\`flemma:tool status=${status}`, '```', '');
  }
  return lines;
}

/**
 * The user's step: the reads wait for the user (a first `<C-]>` stops there, as after any first
 * step the host holds the buffer's settings), the user approves them by editing the fences, and
 * `<C-]>` runs them; autopilot sends the follow-up.
 */
async function measureUserStep(): Promise<Budget> {
  const { d, f, file } = await start();
  await d.openChat('user.chat');
  await d.waitForEvent('FlemmaBootComplete', { timeout: 20000 });
  await d.lua('vim.api.nvim_buf_set_lines(0, 0, -1, false, ...)', waitingChat('pending'));
  await d.press('<C-]>');
  await d.waitForEvent('FlemmaApprovalNeeded', { timeout: 20000 });
  await d.lua('vim.api.nvim_buf_set_lines(0, 0, -1, false, ...)', waitingChat('approved'));
  const mark = labels(file).length;
  await d.press('<C-]>');
  const follow = await f.nextRequest({ path: /^\/v1\/messages/, timeout: 20000 });
  await anthropicReply(follow, 'ok');
  await d.waitForEvent('FlemmaRequestFinished');
  return budget(labels(file).slice(mark), 'wire:in chat:cycle');
}

describe('the message budget of a step (8 auto-approved calls)', () => {
  it('awaits no round trip before the calls start and at most one before the follow-up', async () => {
    const measured = await measure();
    expect(measured.beforeCalls).toEqual([]);
    expect(measured.afterCalls.length).toBeLessThanOrEqual(1);
    // Nothing is asked of Neovim in the step: the host writes to the buffer, and the document
    // store shows the new structure (marks, diagnostics), which nothing in the loop waits for.
    expect(measured.calls.filter((method) => !WRITES.includes(method))).toEqual([]);
    // The figure docs/architecture.md states.
    expect(measured.messages).toBeLessThanOrEqual(20);
  });

  it('a single call: what follows its result rides with the result’s write', async () => {
    const { d, file } = await start();
    await d.openChat('one.chat');
    await d.waitForEvent('FlemmaBootComplete', { timeout: 20000 });
    const lines = waitingChat('approved');
    // Only the first read of the chat, its placeholder last.
    const one = [
      ...lines.slice(0, 11),
      '@You:',
      ...lines.slice(lines.indexOf('@You:', 5) + 1, -35),
    ];
    await d.lua('vim.api.nvim_buf_set_lines(0, 0, -1, false, ...)', one);
    const mark = labels(file).length;
    await d.press('<C-]>');
    await d.waitForEvent('FlemmaToolCompleted', { timeout: 20000 });
    const step = labels(file).slice(mark);
    const after = step.slice(step.findIndex((label) => label.startsWith('tool:done ')));
    // Lua runs them right after the result's edit, in the same round trip (the cursor stays:
    // autopilot goes on).
    expect(after.filter((label) => label.startsWith('wire:ride '))).toEqual([
      'wire:ride tools.spinner',
      'wire:ride buffer.unlock',
      'wire:ride hooks.emit:tool:completed',
    ]);
    expect(after).not.toContain('wire:queue hooks.emit:tool:completed');
    expect(after).not.toContain('wire:queue buffer.unlock');
    expect(await d.lua('return vim.bo.modifiable')).toBe(true);
  });

  it('a step of <C-]> on approved calls asks Neovim nothing before they start', async () => {
    const measured = await measureUserStep();
    expect(measured.beforeCalls).toEqual([]);
    expect(measured.afterCalls.length).toBeLessThanOrEqual(1);
    expect(measured.calls.filter((method) => !WRITES.includes(method))).toEqual([]);
  });
});
