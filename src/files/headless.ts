// A host with no Neovim (`flemma run`): the same services as the Neovim host (`buildHost`), every
// chat a file. What Neovim would answer comes from the options (the base configuration, the
// environment, messages to the user); what only Neovim can do fails with an error naming it
// (`./router.ts`).
import { createFileLogger } from '../host/log.js';
import { buildHost, type HostServices } from '../host/wiring.js';
import type { HeadlessOptions } from './api.js';

export interface HeadlessHost extends HostServices {
  /** Stop what the host started (MCP servers, background processes). */
  close(): Promise<void>;
}

export function createHeadlessHost(options: HeadlessOptions): HeadlessHost {
  const logger = createFileLogger(
    options.logFile,
    options.logFile === undefined ? 'error' : 'info',
  );
  const notify = options.notify ?? (() => undefined);
  const host = buildHost({
    logger,
    logFile: logger.path,
    headless: {
      config: options.config,
      env: options.env ?? process.env,
      notify,
      ...(options.evaluateFrontmatter === undefined
        ? {}
        : { evaluate: options.evaluateFrontmatter }),
    },
  });
  // What Lua's setup would send (`tools:define`): MCP servers first, then the tools.
  const mcp = options.config['mcp'];
  if (mcp !== undefined) host.catalogue.configureMcp(mcp);
  host.catalogue.defineFromLua([], 0, options.tools?.modules ?? [], options.tools?.declarative);
  return {
    ...host,
    close: async () => {
      host.fileAdapter.flushSync();
      await host.catalogue.mcp.shutdown();
      await host.processes.dispose();
    },
  };
}
