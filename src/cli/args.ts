// The command line of `flemma` (docs/cli.md): `flemma run FILE.chat [options]`, `--help`,
// `--version`, read with Node's `util.parseArgs`.
import { parseArgs } from 'node:util';

/** Exit codes (docs/cli.md, "Exit codes"). */
export const EXIT = {
  done: 0,
  error: 1,
  usage: 2,
  approval: 3,
  limit: 4,
  interrupted: 130,
} as const;

/** A mistake in what the user gave (arguments, the file, its frontmatter): exit code 2. */
export class UsageError extends Error {}

export interface RunArgs {
  command: 'run';
  file: string;
  trust: boolean;
  json: boolean;
  dryRun: boolean;
  quiet: boolean;
  maxTurns?: number;
  maxCost?: number;
  provider?: string;
  model?: string;
  config?: string;
}

export type Args = RunArgs | { command: 'help'; text: string } | { command: 'version' };

export const MAIN_HELP = `Usage: flemma <command> [options]

Commands:
  run FILE.chat   Send the chat, run its tool loop, write the reply into the file

Options:
  -h, --help      Show this help (flemma run --help: the options of run)
  -v, --version   Show the version

Documentation: docs/cli.md
`;

export const RUN_HELP = `Usage: flemma run FILE.chat [options]

Sends the chat as <C-]> in Neovim would, runs the calls its approval policy approves
automatically, and writes the reply into the file. Prints the final assistant message.

Options:
  --trust            Apply the file's frontmatter for this run (as if trusted; not recorded)
  --json             One JSON event per line on stdout instead of the final message
  --dry-run          Print the request body that would be sent; send nothing, change nothing
  --max-turns N      Stop after N requests (exit code 4)
  --max-cost USD     Stop once the run's requests cost USD dollars (exit code 4)
  --provider P       Use provider P (over the configuration, under the frontmatter)
  --model M          Use model M (over the configuration, under the frontmatter)
  --config FILE      Read options from FILE (JSON, the table of setup()) instead of
                     $XDG_CONFIG_HOME/flemma/config.json
  -q, --quiet        No progress or notes on stderr (errors still)
  -h, --help         Show this help

Exit codes: 0 done, 1 error (provider, network), 2 usage (arguments, file, frontmatter,
needs Neovim), 3 waiting for approval, 4 limit reached, 130 interrupted.
`;

function positive(name: string, text: string | undefined, integer: boolean): number | undefined {
  if (text === undefined) return undefined;
  const value = Number(text);
  if (
    text.trim() === '' ||
    !Number.isFinite(value) ||
    value <= 0 ||
    (integer && !Number.isInteger(value))
  ) {
    throw new UsageError(
      `--${name} must be a ${integer ? 'whole number' : 'number'} above 0, got '${text}'`,
    );
  }
  return value;
}

function runArgs(argv: readonly string[]): Args {
  const { values, positionals } = parseArgs({
    args: [...argv],
    allowPositionals: true,
    strict: true,
    options: {
      trust: { type: 'boolean', default: false },
      json: { type: 'boolean', default: false },
      'dry-run': { type: 'boolean', default: false },
      quiet: { type: 'boolean', short: 'q', default: false },
      'max-turns': { type: 'string' },
      'max-cost': { type: 'string' },
      provider: { type: 'string' },
      model: { type: 'string' },
      config: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) return { command: 'help', text: RUN_HELP };
  if (positionals.length !== 1 || positionals[0] === undefined) {
    throw new UsageError(
      positionals.length === 0
        ? 'flemma run needs a chat file: flemma run FILE.chat'
        : `flemma run takes one chat file, got ${String(positionals.length)}: ${positionals.join(' ')}`,
    );
  }
  const maxTurns = positive('max-turns', values['max-turns'], true);
  const maxCost = positive('max-cost', values['max-cost'], false);
  return {
    command: 'run',
    file: positionals[0],
    trust: values.trust,
    json: values.json,
    dryRun: values['dry-run'],
    quiet: values.quiet,
    ...(maxTurns === undefined ? {} : { maxTurns }),
    ...(maxCost === undefined ? {} : { maxCost }),
    ...(values.provider === undefined ? {} : { provider: values.provider }),
    ...(values.model === undefined ? {} : { model: values.model }),
    ...(values.config === undefined ? {} : { config: values.config }),
  };
}

/** The command line (without `node` and the script) as what to do; throws `UsageError`. */
export function readArgs(argv: readonly string[]): Args {
  const [first, ...rest] = argv;
  if (first === 'run') {
    try {
      return runArgs(rest);
    } catch (error) {
      if (error instanceof UsageError) throw error;
      // parseArgs' own errors (unknown option, missing value) are the user's mistakes.
      throw new UsageError((error as Error).message);
    }
  }
  if (first === undefined || first === '-h' || first === '--help' || first === 'help') {
    return { command: 'help', text: MAIN_HELP };
  }
  if (first === '-v' || first === '--version') return { command: 'version' };
  throw new UsageError(`unknown command '${first}' (flemma --help lists the commands)`);
}
