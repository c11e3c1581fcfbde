// `:Flemma run`: a chat buffer's file runs as a chat held in a file (the loop with autopilot, in
// the background), with the buffer's trust decision and its environment; the buffer follows the
// file and is read-only until the run ends (lua/flemma/chat/files.lua). How it ended is told.
import { basename } from 'node:path';
import type { HostServices } from '../host/wiring.js';
import type { RunOutcome } from './api.js';

/** How a run ended, for the user (one line). */
export function describeOutcome(name: string, outcome: RunOutcome): string {
  const spent = `${String(outcome.turns)} request${outcome.turns === 1 ? '' : 's'}, $${outcome.cost.toFixed(4)}`;
  switch (outcome.kind) {
    case 'done':
      return `${name}: done (${spent})`;
    case 'approval':
      return `${name}: stopped: ${outcome.calls.map((call) => call.name).join(', ')} waits for approval (${spent})`;
    case 'max_turns':
      return `${name}: stopped at the turn limit (${spent})`;
    case 'max_cost':
      return `${name}: stopped at the cost limit (${spent})`;
    case 'cancelled':
      return `${name}: cancelled (${spent})`;
    default:
      return `${name}: failed: ${outcome.message}`;
  }
}

/** Run the file of chat buffer `bufnr` (`file`, absolute) as a chat held in a file. */
export async function runBufferFile(
  host: HostServices,
  bufnr: number,
  file: string,
): Promise<void> {
  const name = basename(file);
  const state = await host.documents.attach(bufnr);
  if (state === undefined) throw new Error(`${name}: not a chat buffer`);
  const { trust } = await host.states.get(bufnr, state.document);
  const chat = await host.files.open(file, { trust, parent: bufnr });
  host.notify.info(`${name} runs (<C-c> in its buffer stops it)`);
  try {
    const outcome = await host.files.run(chat);
    const message = describeOutcome(name, outcome);
    if (outcome.kind === 'error') host.notify.error(message);
    else host.notify.info(message);
  } finally {
    await host.files.close(chat);
  }
}
