// Prompt → the evaluated prompt providers take, with templates rendered and file references read
// (in messages, and in the results of tools that declare the `template_tool_result` capability:
// every other result is sent as written). MCP references (`@mcp:<server>:<uri>`) are read in
// messages only: in any tool result they are data. Assistant turns are sent as written.
// The core decides what to render and in which order; rendering Lua templates (in Neovim) and
// reading files are ports, so this runs in unit tests without either.
import type { EvaluatedMessage, EvaluatedPart } from '../provider/types.js';
import type { ContentPart, FileReferencePart, Prompt, TextPart } from './prompt.js';

/** One run of text and template parts, as the template renderer takes it. */
export type TemplateSegment =
  { kind: 'text'; text: string } | { kind: 'expression' | 'code'; code: string; line: number };

export interface RenderPorts {
  /** Render every job (Lua, in Neovim); answers one text per job, or an error naming its line. */
  renderTemplates(jobs: TemplateSegment[][]): Promise<{ texts: string[] } | { error: string }>;
  /**
   * Read a referenced file (or an MCP server's resource: `reference.server`) as a part — or
   * several, for a resource that answers with more than one content; throws an Error whose
   * message says what is wrong.
   */
  readReference(reference: FileReferencePart): Promise<EvaluatedPart | EvaluatedPart[]>;
  /**
   * Whether the results of the tool `name` may reference files (`read` answers an image with
   * `@./shot.png;type=image/png`). Other results are sent as written, references included.
   */
  readsResultReferences(name: string): boolean;
}

export interface RenderedPrompt {
  system: string;
  messages: EvaluatedMessage[];
}

type Run = { kind: 'run'; segments: TemplateSegment[]; templated: boolean } | FileReferencePart;

/**
 * `{%-` / `{{-` remove the whitespace (newlines included) before the tag, `-%}` / `-}}` the
 * whitespace after it, from the neighbouring text.
 */
function trimmed(parts: readonly ContentPart[]): readonly ContentPart[] {
  // Most messages trim nothing: their parts are taken as they are (a long chat has hundreds).
  const trims = parts.some(
    (part) =>
      (part.kind === 'expression' || part.kind === 'code') && (part.trimBefore || part.trimAfter),
  );
  if (!trims) return parts;
  const out: ContentPart[] = parts.map((part) => ({ ...part }));
  out.forEach((part, index) => {
    if (part.kind !== 'expression' && part.kind !== 'code') return;
    const before = out[index - 1];
    const after = out[index + 1];
    if (part.trimBefore && before?.kind === 'text') before.text = before.text.replace(/\s+$/u, '');
    if (part.trimAfter && after?.kind === 'text') after.text = after.text.replace(/^\s+/u, '');
  });
  return out;
}

/** Split a message's parts into runs of text/templates and the file references between them. */
function runsOf(parts: readonly ContentPart[]): Run[] {
  const runs: Run[] = [];
  let current: Extract<Run, { kind: 'run' }> | undefined;
  for (const part of trimmed(parts)) {
    if (part.kind === 'file_reference') {
      current = undefined;
      runs.push(part);
      continue;
    }
    if (current === undefined) {
      current = { kind: 'run', segments: [], templated: false };
      runs.push(current);
    }
    if (part.kind === 'text') {
      current.segments.push({ kind: 'text', text: part.text });
    } else {
      current.templated = true;
      current.segments.push({ kind: part.kind, code: part.code, line: part.line });
    }
  }
  return runs;
}

function plainText(segments: readonly TemplateSegment[]): string {
  return segments.map((segment) => (segment.kind === 'text' ? segment.text : '')).join('');
}

/** A result's parts as the text they were written as (a reference is `@` and its text). */
function verbatim(parts: readonly (TextPart | FileReferencePart)[]): EvaluatedPart[] {
  const text = parts
    .map((piece) => (piece.kind === 'text' ? piece.text : `@${piece.raw}`))
    .join('');
  return text === '' ? [] : [{ kind: 'text', text }];
}

export class RenderError extends Error {}

type PlannedRun = Run & { job?: number };
type UserPart = Extract<Prompt['messages'][number], { role: 'user' }>['parts'][number];
type Group = { tool: UserPart } | { plan: PlannedRun[] };

/**
 * One rendering of a prompt: the template jobs, in the order they were planned, and every file
 * read at once (and once), while the templates render.
 */
class PromptRender {
  readonly jobs: TemplateSegment[][] = [];
  private readonly reads = new Map<string, Promise<EvaluatedPart | EvaluatedPart[]>>();
  private readonly readsReferences = new Map<string, boolean>();
  private texts: string[] = [];

  constructor(private readonly ports: RenderPorts) {}

  /** The runs of `parts`, each templated one given its job. */
  plan(parts: readonly ContentPart[]): PlannedRun[] {
    return runsOf(parts).map((run) => {
      if (run.kind === 'run' && run.templated) {
        this.jobs.push(run.segments);
        return { ...run, job: this.jobs.length - 1 };
      }
      return run;
    });
  }

  /**
   * A user message's content parts are planned together (tool results cut them), so that a
   * template spanning text parts stays one run.
   */
  planUser(parts: readonly UserPart[]): Group[] {
    const groups: Group[] = [];
    let pending: ContentPart[] = [];
    const flush = (): void => {
      if (pending.length > 0) groups.push({ plan: this.plan(pending) });
      pending = [];
    };
    for (const part of parts) {
      if (part.kind === 'tool_result') {
        flush();
        groups.push({ tool: part });
      } else {
        pending.push(part);
      }
    }
    flush();
    return groups;
  }

  read(reference: FileReferencePart): Promise<EvaluatedPart | EvaluatedPart[]> {
    const key = `${reference.server ?? ''}\0${reference.path}\0${reference.mime ?? ''}`;
    let pending = this.reads.get(key);
    if (pending === undefined) {
      pending = this.ports.readReference(reference);
      // Failures are reported where the reference is, in `realise`.
      pending.catch(() => undefined);
      this.reads.set(key, pending);
    }
    return pending;
  }

  /** Starts reading the references among `parts` (in a result, an MCP reference is data). */
  collect(parts: readonly { kind: string }[], inResult = false): void {
    for (const part of parts) {
      if (part.kind !== 'file_reference') continue;
      const reference = part as FileReferencePart;
      if (!(inResult && reference.server !== undefined)) void this.read(reference);
    }
  }

  resultReads(name: string): boolean {
    let reads = this.readsReferences.get(name);
    if (reads === undefined) {
      reads = this.ports.readsResultReferences(name);
      this.readsReferences.set(name, reads);
    }
    return reads;
  }

  /** Renders the jobs (the files are read meanwhile) and keeps their texts. */
  async render(rendering: ReturnType<RenderPorts['renderTemplates']> | undefined): Promise<void> {
    if (rendering === undefined) return;
    const rendered = await rendering;
    if ('error' in rendered) throw new RenderError(rendered.error);
    this.texts = rendered.texts;
  }

  /** The parts planned runs give: rendered texts and the files read. */
  async realise(runs: readonly PlannedRun[]): Promise<EvaluatedPart[]> {
    const parts: EvaluatedPart[] = [];
    let text = '';
    for (const run of runs) {
      if (run.kind === 'run') {
        text += run.job === undefined ? plainText(run.segments) : (this.texts[run.job] ?? '');
        continue;
      }
      if (text !== '') parts.push({ kind: 'text', text });
      text = '';
      try {
        const got = await this.read(run);
        if (Array.isArray(got)) parts.push(...got);
        else parts.push(got);
      } catch (error) {
        const why = error instanceof Error ? error.message : String(error);
        throw new RenderError(`line ${String(run.line)}: @${run.raw}: ${why}`);
      }
    }
    if (text !== '') parts.push({ kind: 'text', text });
    return parts;
  }

  /**
   * A tool result: the file references of a `read` result are read (that is how an image comes
   * back); any other tool's output is data, sent as written (`@~/.ssh/…` in a web page stays text).
   */
  async result(part: Extract<UserPart, { kind: 'tool_result' }>): Promise<EvaluatedPart[]> {
    if (!this.resultReads(part.name)) return verbatim(part.parts);
    return this.realise(
      part.parts.map((piece: TextPart | FileReferencePart) =>
        piece.kind === 'text' || piece.server !== undefined
          ? {
              kind: 'run' as const,
              segments: [
                {
                  kind: 'text' as const,
                  text: piece.kind === 'text' ? piece.text : `@${piece.raw}`,
                },
              ],
              templated: false,
            }
          : piece,
      ),
    );
  }

  /** A user message from its groups. */
  async user(groups: readonly Group[]): Promise<EvaluatedMessage> {
    const parts: Extract<EvaluatedMessage, { role: 'user' }>['parts'] = [];
    for (const group of groups) {
      if (!('tool' in group)) {
        parts.push(...(await this.realise(group.plan)));
        continue;
      }
      const part = group.tool;
      if (part.kind !== 'tool_result') continue;
      parts.push({
        kind: 'tool_result',
        toolUseId: part.toolUseId,
        name: part.name,
        parts: await this.result(part),
        isError: part.isError,
        synthetic: part.synthetic,
      });
    }
    return { role: 'user', parts };
  }
}

/**
 * Render the prompt: every `@System:` / `@You:` message's templates (all in one call to the
 * renderer) and file references (read in order). Tool results and assistant turns are sent as
 * written. Throws a `RenderError` that names the line or the file.
 */
export async function renderPrompt(prompt: Prompt, ports: RenderPorts): Promise<RenderedPrompt> {
  const render = new PromptRender(ports);
  const systemPlan = render.plan(prompt.system);
  const userPlans = prompt.messages.map((message) =>
    message.role === 'user' ? render.planUser(message.parts) : undefined,
  );
  // The templates are asked for first: the files are read while they render.
  const rendering = render.jobs.length > 0 ? ports.renderTemplates(render.jobs) : undefined;
  render.collect(prompt.system);
  for (const message of prompt.messages) {
    if (message.role !== 'user') continue;
    for (const part of message.parts) {
      if (part.kind !== 'tool_result') render.collect([part]);
      else if (render.resultReads(part.name)) render.collect(part.parts, true);
    }
  }
  await render.render(rendering);
  const systemParts = await render.realise(systemPlan);
  const system = systemParts
    .map((part) => (part.kind === 'text' || part.kind === 'text_file' ? part.text : ''))
    .join('')
    .trim();
  const messages: EvaluatedMessage[] = [];
  for (const [index, message] of prompt.messages.entries()) {
    if (message.role === 'assistant') {
      messages.push({
        role: 'assistant',
        parts: message.parts.map((part) =>
          part.kind === 'text' ? { kind: 'text' as const, text: part.text } : part,
        ),
      });
      continue;
    }
    messages.push(await render.user(userPlans[index] ?? []));
  }
  return { system, messages };
}
