// `<M-CR>` (`:Flemma tool:execute`): the call under the cursor, as one step of the buffer's loop
// (it waits its turn in the conversation's queue, docs/architecture.md "The conversation loop").
// It is the user's explicit approval: a pending call runs, a bare tool use gets its placeholder
// first, a finished call is run again (its result replaced). A rejected, denied or aborted call
// gets the error result Phase 2 writes (`resolutionEdits`), and autopilot may go on. A paused
// autopilot goes on once the call is done (`rearmIfPaused`).
import { bottomToTop, classifyToolBlocks } from '../chat/edits.js';
import { toolCallAt } from '../tools/locate.js';
import type { Autopilot } from './autopilot.js';
import { BUSY_CALL, type StepOutcome, type StepPorts, resolutionEdits } from './cycle.js';
import type { LoopState, StepSettings } from './ports.js';

/** Runs (or answers) the call the cursor on 0-based `row` means. */
export async function runCallAt<C extends StepSettings>(
  ports: StepPorts<C>,
  pilot: Autopilot,
  row: number,
): Promise<StepOutcome> {
  const { editor, tools, provider } = ports;
  const state = await editor.read();
  if (state === undefined) return 'refused';
  const found = toolCallAt(state.document, row + 1);
  if (!found.ok) {
    editor.warn(found.error);
    return 'refused';
  }
  const { call } = found;
  const context = await editor.context(true, state);
  if (context.problem !== undefined) {
    editor.error(context.problem);
    return 'refused';
  }
  const settings = context.autopilot;
  // A paused autopilot goes on once this call is done.
  pilot.rearmIfPaused(settings);
  const status = call.result?.placeholder?.status;
  if (status === 'rejected' || status === 'denied' || status === 'aborted') {
    await answer(ports, state, call.id, context);
    await pilot.toolsFinished(settings);
    return 'started';
  }
  if (provider.running()) {
    editor.warn(BUSY_CALL);
    return 'refused';
  }
  const rerun = call.result !== undefined && call.result.placeholder === undefined;
  tools.run({ id: call.id, name: call.name, input: call.input }, context, rerun);
  return 'started';
}

/** The error result of the call `id` that will not run, as Phase 2 writes it. */
async function answer<C extends StepSettings>(
  ports: StepPorts<C>,
  state: LoopState,
  id: string,
  context: C,
): Promise<void> {
  const groups = classifyToolBlocks(state.document);
  const only = (blocks: typeof groups.denied): typeof blocks => blocks.filter((b) => b.id === id);
  const edits = await resolutionEdits(
    ports.tools,
    state,
    { denied: only(groups.denied), rejected: only(groups.rejected), aborted: only(groups.aborted) },
    context,
  );
  if (edits.length > 0) await ports.editor.apply(bottomToTop(edits));
}
