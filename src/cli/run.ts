// `flemma run FILE.chat` (docs/cli.md): the chat opened on a host with no Neovim
// (`src/files/headless.ts`), run as `<C-]>` with autopilot (only calls its approval policy
// approves run), the reply written into the file by the runner; the outcome as an exit code.
import { readFile, stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import { parseChat } from '../core/chat/parser.js';
import { Redactor } from '../core/secrets/redact.js';
import type { FileChat, OpenOptions, RunOutcome } from '../files/api.js';
import { createHeadlessHost, type HeadlessHost } from '../files/headless.js';
import { EXIT, type RunArgs, UsageError } from './args.js';
import { argsLayer, loadConfig } from './config.js';
import { cliFrontmatter, type FrontmatterFindings, untrustedNotes } from './frontmatter.js';
import { Output, type Streams } from './output.js';
import { decideTrust, trustNote } from './trust.js';

type Env = Readonly<Record<string, string | undefined>>;

export interface RunContext {
  streams: Streams;
  env: Env;
  /** Aborted on SIGINT: the run is cancelled as `<C-c>` cancels it. */
  signal: AbortSignal;
}

/** Errors of what only Neovim has, or of the chat itself: exit code 2 rather than 1. */
const CHAT_ERROR = /^frontmatter line \d+:|needs? Neovim|unknown tool '|^nothing (new )?to send/;

const NOTHING_TO_SEND =
  'nothing new to send: the chat ends with an empty @You: message (write the next message under it)';

/** The outcome's exit code, and the error to print (docs/cli.md, "Exit codes"). */
export function ending(
  outcome: RunOutcome,
  findings: FrontmatterFindings,
  errors: readonly string[],
): { code: number; error?: string } {
  switch (outcome.kind) {
    case 'done':
      // Nothing sent: refused before the request (the host said why), or nothing new to send.
      if (outcome.turns > 0) return { code: EXIT.done };
      return {
        code: EXIT.usage,
        error: errors[0] ?? NOTHING_TO_SEND,
      };
    case 'approval':
      return { code: EXIT.approval };
    case 'max_turns':
    case 'max_cost':
      return { code: EXIT.limit };
    case 'cancelled':
      return { code: EXIT.interrupted };
    case 'error': {
      const raw = findings.error ?? outcome.message;
      const message = /^nothing (new )?to send$/.test(raw) ? NOTHING_TO_SEND : raw;
      const usage = 'usage' in outcome && outcome.usage === true;
      const hint = /unknown tool '/.test(message)
        ? ' (without Neovim the tools are the built-in, declarative and MCP ones: a Lua tool needs Neovim)'
        : '';
      return {
        code:
          usage || findings.error !== undefined || CHAT_ERROR.test(message)
            ? EXIT.usage
            : EXIT.error,
        error: message + hint,
      };
    }
  }
}

/**
 * What the host tells the user during a run: warnings at once (but its one-line summary of the
 * options not applied, when the CLI named them itself), errors kept for the end.
 */
class Notices {
  readonly errors: string[] = [];

  constructor(
    private readonly output: Output,
    private readonly named: boolean,
  ) {}

  readonly notify = (level: 'info' | 'warn' | 'error', message: string): void => {
    if (level === 'error') {
      if (!this.errors.includes(message)) this.errors.push(message);
    } else if (level === 'warn' && !(this.named && / not applied until :trust$/.test(message))) {
      this.output.note(message);
    }
  };
}

/** What the user is told on stderr when the run did not end with a reply. */
function outcomeNote(outcome: RunOutcome, file: string, args: RunArgs): string | undefined {
  switch (outcome.kind) {
    case 'approval':
      return `waiting for approval: ${outcome.calls.map((call) => `${call.name} (${call.id})`).join(', ')}; the placeholders are in ${file} (approve them in Neovim, or widen tools.auto_approve)`;
    case 'max_cost':
      return `stopped at $${outcome.cost.toFixed(4)} (--max-cost ${String(args.maxCost ?? '')})`;
    case 'cancelled':
      return 'interrupted: the partial reply is kept in the file, marked as aborted';
    default:
      return undefined;
  }
}

async function readChat(file: string): Promise<{ path: string; bytes: Buffer }> {
  const path = resolve(file);
  try {
    if (!(await stat(path)).isFile()) throw new UsageError(`${file} is not a file`);
    return { path, bytes: await readFile(path) };
  } catch (error) {
    if (error instanceof UsageError) throw error;
    throw new UsageError(
      `cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
    );
  }
}

/** The chat opened on the host; what refuses it (in use in Neovim, needs Neovim) is exit code 2. */
async function openChat(host: HeadlessHost, path: string, options: OpenOptions): Promise<FileChat> {
  try {
    return await host.files.open(path, options);
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

/**
 * What `--dry-run` prints: the body the provider's adapter would send (undefined when the request
 * cannot be made; the host said why).
 */
async function requestBody(host: HeadlessHost, chat: FileChat): Promise<unknown> {
  const prepared = await host.requests.prepare(chat.bufnr, undefined);
  return prepared?.adapter.buildBody(prepared.request);
}

/** Run the chat of `args`; answers the exit code (a `UsageError` thrown is exit code 2). */
export async function runChat(args: RunArgs, context: RunContext): Promise<number> {
  const redactor = new Redactor();
  redactor.addEnvironment(context.env);
  const output = new Output(context.streams, args, redactor);
  const config = await loadConfig(args, context.env);
  const { path, bytes } = await readChat(args.file);
  const document = parseChat(bytes.toString('utf8'));
  const trust = await decideTrust({ path, bytes, document, given: args.trust, env: context.env });
  if (!trust.trusted && document.frontmatter !== undefined) {
    output.note(trustNote(trust, args.file));
    for (const line of await untrustedNotes(document, config, args.file)) output.note(line);
  }
  const findings: FrontmatterFindings = {};
  const notices = new Notices(output, !trust.trusted && document.frontmatter !== undefined);
  const host = createHeadlessHost({
    config,
    evaluateFrontmatter: cliFrontmatter(findings),
    notify: notices.notify,
    env: context.env,
  });
  try {
    const chat = await openChat(host, path, {
      trust,
      configLayer: argsLayer(args),
      cwd: process.cwd(),
    });
    if (args.dryRun) {
      const body = await requestBody(host, chat);
      if (body !== undefined) output.body(body);
      else output.error(notices.errors.join('; ') || 'nothing new to send', EXIT.usage);
      return body === undefined ? EXIT.usage : EXIT.done;
    }
    const onAbort = (): void => void host.files.cancel(chat);
    context.signal.addEventListener('abort', onAbort, { once: true });
    const outcome = await host.files.run(chat, {
      ...(args.maxTurns === undefined ? {} : { maxTurns: args.maxTurns }),
      ...(args.maxCost === undefined ? {} : { maxCost: args.maxCost }),
      signal: context.signal,
      autopilot: true,
      onEvent: (event) => {
        output.event(event);
      },
    });
    context.signal.removeEventListener('abort', onAbort);
    const { code, error } = ending(outcome, findings, notices.errors);
    if (error !== undefined) output.error(error, code);
    for (const other of notices.errors.filter((message) => !(error ?? '').startsWith(message))) {
      output.note(other);
    }
    const said = outcomeNote(outcome, args.file, args);
    if (said !== undefined) output.note(said);
    output.result(outcome, code);
    return code;
  } finally {
    await host.close();
  }
}
