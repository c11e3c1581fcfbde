// The configuration of `flemma run` (docs/cli.md, "Configuration"): the schema's defaults, the
// user's own options (`--config FILE`, else `$XDG_CONFIG_HOME/flemma/config.json` when it exists),
// then `--provider` / `--model` as a layer under the chat's frontmatter.
import { readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { schemaDefaults } from '../core/config/schema-data.js';
import { mergeUserConfig } from '../core/config/user-config.js';
import type { ConfigLayer } from '../files/api.js';
import { type RunArgs, UsageError } from './args.js';

type Env = Readonly<Record<string, string | undefined>>;

/** Where the user's options are read from when `--config` is not given. */
export function defaultConfigPath(env: Env): string {
  const base = env['XDG_CONFIG_HOME'];
  return join(
    base !== undefined && base !== '' ? base : join(env['HOME'] ?? homedir(), '.config'),
    'flemma',
    'config.json',
  );
}

/** The base configuration: defaults and the user's options; a bad file is a `UsageError`. */
export async function loadConfig(args: RunArgs, env: Env): Promise<Record<string, unknown>> {
  const path = args.config ?? defaultConfigPath(env);
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (args.config === undefined && code === 'ENOENT') return schemaDefaults();
    throw new UsageError(`cannot read the configuration ${path}: ${(error as Error).message}`);
  }
  let user: unknown;
  try {
    user = JSON.parse(text);
  } catch (error) {
    throw new UsageError(`${path}: invalid JSON: ${(error as Error).message}`);
  }
  const merged = mergeUserConfig(schemaDefaults(), user, path);
  if ('error' in merged) throw new UsageError(merged.error);
  return merged.config;
}

/**
 * `--provider` and `--model` as options over the configuration, under the frontmatter (as
 * `:Flemma switch` sets them): a provider without a model takes that provider's default model.
 */
export function argsLayer(args: RunArgs): ConfigLayer {
  return [
    ...(args.provider === undefined ? [] : [{ path: ['provider'], value: args.provider }]),
    ...(args.model === undefined
      ? args.provider === undefined
        ? []
        : [{ path: ['model'], value: null }]
      : [{ path: ['model'], value: args.model }]),
  ];
}
