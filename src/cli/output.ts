// What `flemma run` prints (docs/cli.md, "Output"): the final assistant message on stdout, or with
// `--json` one JSON event per line (request, delta, tool_start, tool_end, usage, result, error);
// progress on stderr only when stderr is a terminal; notes and errors on stderr, secrets redacted.
import type { RunEvent, RunOutcome } from '../files/api.js';
import { REDACTED, Redactor } from '../core/secrets/redact.js';

/** Where the CLI writes: the process's streams in the program, anything in a test. */
export interface Streams {
  out: (text: string) => void;
  err: (text: string) => void;
  /** stderr is a terminal: progress is shown there. */
  errIsTty: boolean;
}

export interface OutputOptions {
  json: boolean;
  quiet: boolean;
}

/** Total of a run as the JSON events carry it. */
function totals(
  outcome: Pick<RunOutcome, 'turns' | 'cost' | 'inputTokens' | 'outputTokens'>,
): Record<string, number> {
  return {
    turns: outcome.turns,
    cost: outcome.cost,
    input_tokens: outcome.inputTokens,
    output_tokens: outcome.outputTokens,
  };
}

/** A run's event as the JSON line `--json` prints, or undefined for events it does not show. */
export function jsonEvent(event: RunEvent): Record<string, unknown> | undefined {
  switch (event.type) {
    case 'request':
      return { type: 'request', turn: event.turn };
    case 'text':
      return { type: 'delta', text: event.text };
    case 'tool_started':
      return { type: 'tool_start', id: event.id, name: event.name };
    case 'tool_finished':
      return { type: 'tool_end', id: event.id, name: event.name, status: event.status };
    case 'usage':
      return {
        type: 'usage',
        provider: event.request.provider,
        model: event.request.model,
        input_tokens: event.request.input_tokens,
        output_tokens: event.request.output_tokens,
        ...(event.request.cost === undefined ? {} : { cost: event.request.cost }),
        totals: totals(event.totals),
      };
    default:
      return undefined;
  }
}

/** Progress for a terminal, one short line per step. */
function progressLine(event: RunEvent): string | undefined {
  switch (event.type) {
    case 'request':
      return `flemma: request ${String(event.turn)}…`;
    case 'tool_started':
      return `flemma: running ${event.name} (${event.id})`;
    case 'tool_finished':
      return `flemma: ${event.name} ${event.status === 'success' ? 'done' : 'failed'}`;
    default:
      return undefined;
  }
}

export class Output {
  constructor(
    private readonly streams: Streams,
    private readonly options: OutputOptions,
    private readonly redactor: Redactor,
  ) {}

  /**
   * `text` without the secrets the CLI knows (the environment's values whose names look secret,
   * the credentials among them): replaced whole, as in the log. The log's shape rules are not
   * applied: they would hide the words `api_key:` in the host's own explanations.
   */
  private safe(text: string): string {
    let out = text;
    for (const secret of this.redactor.known()) {
      if (out.includes(secret)) out = out.split(secret).join(REDACTED);
    }
    return out;
  }

  private line(record: Record<string, unknown>): void {
    this.streams.out(`${JSON.stringify(record)}\n`);
  }

  event(event: RunEvent): void {
    if (this.options.json) {
      const record = jsonEvent(event);
      if (record !== undefined) this.line(record);
      return;
    }
    if (this.options.quiet || !this.streams.errIsTty) return;
    const line = progressLine(event);
    if (line !== undefined) this.streams.err(`${line}\n`);
  }

  /** A note for the user (stderr), unless quiet. */
  note(text: string): void {
    if (!this.options.quiet) this.streams.err(`flemma: ${this.safe(text)}\n`);
  }

  /** An error: stderr always, and an `error` event with `--json`. */
  error(message: string, exitCode: number): void {
    const text = this.safe(message);
    this.streams.err(`flemma: error: ${text}\n`);
    if (this.options.json) this.line({ type: 'error', message: text, exit_code: exitCode });
  }

  /** The end of a run: the final message (or the `result` event). */
  result(outcome: RunOutcome, exitCode: number): void {
    if (this.options.json) {
      this.line({
        type: 'result',
        outcome: outcome.kind,
        exit_code: exitCode,
        ...(outcome.kind === 'done' && exitCode === 0 ? { text: outcome.text } : {}),
        ...(outcome.kind === 'approval' ? { calls: outcome.calls } : {}),
        ...(outcome.kind === 'error' ? { message: this.safe(outcome.message) } : {}),
        ...totals(outcome),
      });
    } else if (outcome.kind === 'done' && exitCode === 0) {
      this.streams.out(outcome.text.endsWith('\n') ? outcome.text : `${outcome.text}\n`);
    }
  }

  /** The request body of `--dry-run`. */
  body(body: unknown): void {
    this.streams.out(`${JSON.stringify(body, null, this.options.json ? undefined : 2)}\n`);
  }
}

/**
 * The line for an error nothing else caught (`flemma: error: …`), with what looks secret in it
 * and the secret-looking variables of `env` redacted, as every other line the CLI prints.
 */
export function failureLine(error: unknown, env: NodeJS.ProcessEnv, prefix = 'error: '): string {
  const redactor = new Redactor();
  redactor.addEnvironment(env);
  const message = error instanceof Error ? error.message : String(error);
  return `flemma: ${prefix}${redactor.text(message)}\n`;
}
