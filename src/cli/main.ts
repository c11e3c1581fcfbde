// The `flemma` command (dist/cli.js; `bin` in package.json, so `npx flemma run FILE.chat` from a
// clone): runs a chat from the shell with no Neovim (docs/cli.md). Loads no Neovim client: the
// build checks that the bundle holds none.
import { EXIT, readArgs, UsageError } from './args.js';
import { failureLine } from './output.js';
import { runChat } from './run.js';

declare const __FLEMMA_VERSION__: string;
const VERSION = typeof __FLEMMA_VERSION__ === 'string' ? __FLEMMA_VERSION__ : 'dev';

// eslint-disable-next-line no-restricted-properties -- the CLI's stdout is the user's, not RPC
const stdout = process.stdout;

function write(stream: NodeJS.WriteStream, text: string): void {
  stream.write(text);
}

async function main(argv: readonly string[]): Promise<number> {
  const streams = {
    out: (text: string) => {
      write(stdout, text);
    },
    err: (text: string) => {
      write(process.stderr, text);
    },
    errIsTty: process.stderr.isTTY,
  };
  try {
    const args = readArgs(argv);
    if (args.command === 'help') {
      streams.out(args.text);
      return EXIT.done;
    }
    if (args.command === 'version') {
      streams.out(`flemma ${VERSION}\n`);
      return EXIT.done;
    }
    const controller = new AbortController();
    let interrupts = 0;
    process.on('SIGINT', () => {
      interrupts += 1;
      // A second Ctrl-C does not wait for the cancel to finish.
      if (interrupts > 1) process.exit(EXIT.interrupted);
      controller.abort();
    });
    return await runChat(args, { streams, env: process.env, signal: controller.signal });
  } catch (error) {
    if (error instanceof UsageError) {
      streams.err(failureLine(error, process.env, ''));
      return EXIT.usage;
    }
    streams.err(failureLine(error, process.env));
    return EXIT.error;
  }
}

void main(process.argv.slice(2)).then((code) => {
  process.exitCode = code;
  // Output flushed first: a pipe's writes may still be queued.
  stdout.write('', () => {
    process.exit(code);
  });
});
