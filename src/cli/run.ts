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

/** The exit code of an outcome (docs/cli.md, "Exit codes"). */
export function exitCodeOf(outcome: RunOutcome, findings: FrontmatterFindings): number {
  switch (outcome.kind) {
    case 'done':
      return EXIT.done;
    case 'approval':
      return EXIT.approval;
    case 'max_turns':
    case 'max_cost':
      return EXIT.limit;
    case 'cancelled':
      return EXIT.interrupted;
    case 'error':
      return findings.error !== undefined || ('usage' in outcome && outcome.usage === true)
        ? EXIT.usage
        : EXIT.error;
  }
}

/** What the user is told on stderr when the run did not end with a reply. */
function outcomeNote(outcome: RunOutcome, file: string, args: RunArgs): string | undefined {
  switch (outcome.kind) {
    case 'approval':
      return `waiting for approval: ${outcome.calls.map((call) => `${call.name} (${call.id})`).join(', ')}; the placeholders are in ${file} (approve them in Neovim, or widen tools.auto_approve)`;
    case 'max_turns':
      return `stopped after ${String(outcome.turns)} requests (--max-turns ${String(args.maxTurns ?? '')})`.replace(
        ' (--max-turns )',
        ' (tools.autopilot.max_turns)',
      );
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

/** What `--dry-run` prints: the body the provider's adapter would send. */
async function requestBody(host: HeadlessHost, chat: FileChat): Promise<unknown> {
  const dry = host as HeadlessHost & {
    requestBody?: (chat: FileChat) => Promise<unknown>;
    requests?: {
      prepare(bufnr: number): Promise<{
        adapter: { buildBody(request: unknown): unknown };
        request: unknown;
      }>;
    };
  };
  if (dry.requestBody !== undefined) return dry.requestBody(chat);
  if (dry.requests === undefined) throw new Error('--dry-run: this host cannot build a request');
  const prepared = await dry.requests.prepare(chat.bufnr);
  return prepared.adapter.buildBody(prepared.request);
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
  const host = createHeadlessHost({
    config,
    evaluateFrontmatter: cliFrontmatter(findings),
    notify: (level, message) => {
      if (level !== 'info') output.note(message);
    },
    env: context.env,
  });
  try {
    const chat = await openChat(host, path, {
      trust,
      configLayer: argsLayer(args),
      cwd: process.cwd(),
    });
    if (args.dryRun) {
      output.body(await requestBody(host, chat));
      return EXIT.done;
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
    const code = exitCodeOf(outcome, findings);
    if (outcome.kind === 'error') output.error(findings.error ?? outcome.message, code);
    const said = outcomeNote(outcome, args.file, args);
    if (said !== undefined) output.note(said);
    output.result(outcome, code);
    return code;
  } finally {
    await host.close();
  }
}
