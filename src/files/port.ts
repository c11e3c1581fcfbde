// The file adapter's port over the host's services (built by the wiring): the base
// configuration as the host holds it, the frontmatter evaluated by Lua in Neovim (by the caller's
// evaluator, or not at all, with no Neovim), a parent buffer's environment and facts.
import type { HostBase } from '../host/base.js';
import type { EditorStates } from '../host/editor-state.js';
import type { FileSettingsPort } from './adapter.js';
import type { FrontmatterEvaluator } from './api.js';
import { headlessFrontmatter } from './settings.js';

export interface PortLink {
  /** Whether Neovim is there (then it evaluates frontmatter and is told of writes). */
  neovim: boolean;
  evaluate?: FrontmatterEvaluator | undefined;
  env?: Readonly<Record<string, string | undefined>> | undefined;
}

export function fileSettingsPort(
  link: PortLink,
  base: () => Pick<HostBase, 'config' | 'lua' | 'logger' | 'notify'>,
  states: () => Pick<EditorStates, 'inherited'>,
): FileSettingsPort {
  const evaluate: FrontmatterEvaluator = link.neovim
    ? (chat, request, trust) =>
        base().lua.call('frontmatter.evaluate', {
          bufnr: chat.bufnr,
          path: chat.path,
          frontmatter: request,
          trusted: trust.trusted,
        })
    : (link.evaluate ?? ((_chat, request) => headlessFrontmatter(request)));
  return {
    baseConfig: async () => (await base().config.get(base().lua)).data,
    evaluate,
    inherited: (bufnr) => states().inherited(bufnr),
    env: link.env ?? process.env,
    ...(link.neovim
      ? {
          changed: (path: string, running: boolean) => {
            base().lua.notify('files.changed', { path, running });
          },
        }
      : {}),
    failed: (path, error) => {
      const message = error instanceof Error ? error.message : String(error);
      base().logger.warn(`writing ${path} failed`, error);
      base().notify.warn(`Writing ${path} failed: ${message}`);
    },
  };
}
