// What running calls print, as it comes (docs/tools.md, "Watching a command run"): the tail of
// each call's output, and the live view under its block in Neovim, at most one `tools.output`
// notification per buffer per frame. `:Flemma tool:output` reads the tail of a running call, or
// the whole output the truncation saved once it ended.
//
// Decisions:
// - A chunk costs the host a concatenation and a flag (OutputTail.push); the lines are found and
//   cleaned once per frame, only for calls that printed something since the last one.
// - Notifications made in one turn of the event loop travel together (rpc.md), so the view goes
//   with whatever else the host sends in that frame; Lua draws it and owns nothing else.
// - A call whose view was never drawn (it printed nothing, or ended within its first frame) sends
//   nothing when it ends: the view costs a quick call no message.
import { open } from 'node:fs/promises';
import { displayLine, OutputTail } from '../../core/tools/output-tail.js';
import { toolCallAt } from '../../core/tools/locate.js';
import { formatSize, overflowPath } from '../../core/tools/truncate.js';
import type { LuaBridge } from '../../editor/lua.js';
import type { ToolExecutor } from './executor.js';
import type { ResultWriter } from './results.js';

/** One frame: the view is drawn at most this often. */
export const FRAME_MS = 16;

/** At most this much of a saved output is shown by `:Flemma tool:output` (its end). */
const SHOW_MAX_BYTES = 8 * 1024 * 1024;

interface Live {
  bufnr: number;
  id: string;
  lines: number;
  tail: OutputTail;
  /** Printed since the view was last drawn. */
  dirty: boolean;
  /** The view was drawn: its end clears it. */
  shown: boolean;
}

/** What `:Flemma tool:output` opens (`lines`), or why there is nothing to open (`message`). */
export type ToolOutputAnswer = { lines: string[] } | { message: string };

/** Lines of untrusted text as a scratch buffer may hold them. */
function cleanLines(text: string): string[] {
  return text
    .trimEnd()
    .split('\n')
    .map((line) => displayLine(line, Number.POSITIVE_INFINITY));
}

/** The end of the file at `path` (at most `max` bytes) and its size; undefined when absent. */
async function readEnd(
  path: string,
  max: number,
): Promise<{ text: string; size: number } | undefined> {
  let handle;
  try {
    handle = await open(path, 'r');
  } catch {
    return undefined;
  }
  try {
    const { size } = await handle.stat();
    const length = Math.min(size, max);
    const buffer = Buffer.alloc(length);
    await handle.read(buffer, 0, length, size - length);
    return { text: buffer.toString('utf8'), size };
  } finally {
    await handle.close();
  }
}

export class LiveOutput {
  private readonly calls = new Map<string, Live>();
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly editor: Pick<LuaBridge, 'notify'>) {}

  /**
   * Running call `id` printed `chunk`; `lines` of its output show under its block (none when 0:
   * its tail is kept for `:Flemma tool:output` all the same).
   */
  readonly push = (output: {
    bufnr: number;
    id: string;
    chunk: string | Uint8Array;
    lines: number;
  }): void => {
    const { bufnr, id, chunk, lines } = output;
    let live = this.calls.get(id);
    if (live === undefined) {
      live = { bufnr, id, lines, tail: new OutputTail(), dirty: false, shown: false };
      this.calls.set(id, live);
    }
    live.tail.push(chunk);
    if (lines <= 0) return;
    live.dirty = true;
    this.timer ??= setTimeout(() => {
      this.flush();
    }, FRAME_MS);
  };

  /**
   * The call stopped running (its result written, or cancelled): its view goes (through `via`
   * when given: with the result's write).
   */
  readonly end = ({ id, via }: { id: string; via?: Pick<LuaBridge, 'notify'> }): void => {
    const live = this.calls.get(id);
    if (live === undefined) return;
    this.calls.delete(id);
    if (live.shown) {
      (via ?? this.editor).notify('tools.output', {
        bufnr: live.bufnr,
        outputs: [{ tool_id: id, lines: [] }],
      });
    }
  };

  /** One frame: the view of every call that printed since the last, one notification a buffer. */
  private flush(): void {
    this.timer = undefined;
    const buffers = new Map<number, { tool_id: string; lines: string[] }[]>();
    for (const live of this.calls.values()) {
      if (!live.dirty) continue;
      live.dirty = false;
      live.shown = true;
      const outputs = buffers.get(live.bufnr) ?? [];
      outputs.push({ tool_id: live.id, lines: live.tail.lastLines(live.lines) });
      buffers.set(live.bufnr, outputs);
    }
    for (const [bufnr, outputs] of buffers) this.editor.notify('tools.output', { bufnr, outputs });
  }

  /**
   * `:Flemma tool:output` for call `id`: what it printed so far while it runs, else the whole
   * output the truncation saved in `dir` (a result that was not cut holds all of it). A call
   * whose result is being written has no view any more: its saved output is what there is.
   */
  async show(
    call: { id: string; name: string },
    running: boolean,
    dir: string,
  ): Promise<ToolOutputAnswer> {
    const what = `${call.name} (${call.id})`;
    const live = this.calls.get(call.id);
    if (live !== undefined) {
      const { text, dropped } = live.tail.snapshot();
      const head =
        dropped > 0
          ? `${what} runs; its last ${formatSize(Buffer.byteLength(text))} so far (${formatSize(dropped)} before them are not kept while it runs):`
          : `${what} runs; its output so far:`;
      return { lines: [head, '', ...cleanLines(text)] };
    }
    const saved = await readEnd(overflowPath(call.name, call.id, dir), SHOW_MAX_BYTES);
    if (running && (saved === undefined || saved.size === 0)) {
      return { message: `${what} runs and has printed nothing yet` };
    }
    if (saved === undefined) {
      return {
        message: `${what} is not running, and its result holds all of its output (none was saved)`,
      };
    }
    const head =
      saved.size > SHOW_MAX_BYTES
        ? `${what}: the last ${formatSize(SHOW_MAX_BYTES)} of its output (${formatSize(saved.size)}, saved in ${overflowPath(call.name, call.id, dir)}):`
        : `${what}: its whole output (saved in ${overflowPath(call.name, call.id, dir)}):`;
    return { lines: [head, '', ...cleanLines(saved.text)] };
  }
}

/** `:Flemma tool:output`: what the call under the cursor (0-based `row`) printed; `dir`, where outputs are saved. */
export async function outputAt(
  host: {
    results: Pick<ResultWriter, 'fresh'>;
    executor: Pick<ToolExecutor, 'isCallRunning'>;
    liveOutput: LiveOutput;
  },
  bufnr: number,
  row: number,
  dir: string,
): Promise<ToolOutputAnswer> {
  const state = await host.results.fresh(bufnr);
  if (state === undefined) return { message: 'Not a chat buffer' };
  const found = toolCallAt(state.document, row + 1);
  if (!found.ok) return { message: found.error };
  return host.liveOutput.show(found.call, host.executor.isCallRunning(found.call.id), dir);
}
