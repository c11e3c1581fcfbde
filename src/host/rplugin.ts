// The remote-plugin route: the classic Node host (`:UpdateRemotePlugins`) loads this module and
// it exposes the same dispatch table as the job host, as the function FlemmaHost(method, params).
import type { NvimPlugin } from '../editor/client.js';
import { dispatch } from './actions.js';
import { createHost, type Host } from './wiring.js';
import { hostLogger } from './log.js';

export default function register(plugin: NvimPlugin): void {
  let ctx: Host | undefined;
  plugin.registerFunction(
    'FlemmaHost',
    async (args: unknown[]) => {
      ctx ??= createHost(plugin.nvim, hostLogger, hostLogger.path);
      const [method, params] = args as [string, unknown];
      return await dispatch(ctx, method, params ?? null);
    },
    { sync: true },
  );
}
