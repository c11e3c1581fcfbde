// The message budget of one step of the tool loop (docs/architecture.md, "The message budget"),
// counted on the wire: a reply asks for 8 `read` calls at once, the default policy approves them,
// autopilot places and runs them and sends the follow-up. The host's wire trace (`FLEMMA_TRACE`,
// src/editor/trace.ts) marks every host → Lua call (`wire:call`), its answer, every batch of
// notifications (`wire:notify`) and every Lua → host message (`wire:in`). Between the end of the
// reply's stream and the first call starting (`tool:executing` posted) no call may be made, and
// at most one before the follow-up request leaves.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { anthropicReply } from '../helpers/anthropic-script.js';
import { type Driver, startDriver } from '../helpers/driver.js';
import { type FakeProvider, startFakeProvider } from '../helpers/fake-provider.js';

let driver: Driver | undefined;
let fake: FakeProvider | undefined;
let dir: string | undefined;

afterEach(async () => {
  await driver?.quit();
  await fake?.close();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  driver = undefined;
  fake = undefined;
  dir = undefined;
});

/** The trace's labels in order (each line is `<ms> <label>`). */
function labels(file: string): string[] {
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => line.slice(line.indexOf(' ') + 1));
}

interface Budget {
  /** Host → Lua calls made from the end of the reply until the calls were handed to the executor. */
  beforeCalls: string[];
  /** Round trips (call and answer) from the last call's return until the follow-up left. */
  afterCalls: string[];
  /** Every host → Lua call of the step. */
  calls: string[];
  /** Wire messages of the step: calls, answers, notification batches, Lua → host messages. */
  messages: number;
}

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
 * The step: from the reply being in the buffer (`send:finished`) to the follow-up's headers
 * (`http:headers-sent`); the calls start when the step hands them to the executor
 * (`tools:dispatch`), and the last of them returns at its `tool:done`.
 */
function budget(trace: string[]): Budget {
  const start = trace.indexOf('send:finished');
  const end = trace.findIndex((label, i) => i > start && label === 'http:headers-sent');
  expect(start).toBeGreaterThanOrEqual(0);
  expect(end).toBeGreaterThan(start);
  const step = trace.slice(start, end);
  const dispatched = step.indexOf('tools:dispatch');
  expect(dispatched).toBeGreaterThan(0);
  const returned = step.map((label) => label.startsWith('tool:done ')).lastIndexOf(true);
  expect(returned).toBeGreaterThan(dispatched);
  return {
    beforeCalls: called(step.slice(0, dispatched)),
    afterCalls: roundTrips(step.slice(returned)),
    calls: called(step),
    messages: step.filter((label) => /^wire:(call|answer|notify|in) /.test(label)).length,
  };
}

/** The host's writes into Neovim, which ask nothing. */
const WRITES = ['buffer.apply_batch', 'chat.structure'];

async function measure(): Promise<Budget> {
  dir = mkdtempSync(join(tmpdir(), 'flemma-wire-'));
  const file = join(dir, 'trace.log');
  fake = await startFakeProvider();
  driver = await startDriver({
    env: { ANTHROPIC_API_KEY: 'sk-test', ANTHROPIC_BASE_URL: fake.url, FLEMMA_TRACE: file },
    setup: 'require("flemma").setup({})',
  });
  for (let i = 1; i <= 8; i++) driver.writeFile(`file${String(i)}.txt`, `file ${String(i)}\n`);
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
});
