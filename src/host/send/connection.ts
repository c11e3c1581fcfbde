// The provider a request goes to: its entry in the table of providers, its base URL, the
// credential (resolved again, past the cache, after the provider refused it), the model and the
// adapter that speaks to it. A problem is told to the user, naming the provider.
import type { Config } from '../../core/config/config.js';
import type { ProviderAdapter } from '../../core/provider/types.js';
import { DEFAULT_STREAM_IDLE_MS } from '../../core/provider/watchdog.js';
import { secondsMs } from '../../core/util/timer.js';
import { trace } from '../../editor/trace.js';
import type { HostBase } from '../base.js';
import { type BufferSettings, KNOWN_ENV } from '../buffer-settings.js';
import { PROVIDERS, type ProviderParameters } from '../providers.js';

export interface ProviderConnection {
  providerName: string;
  model: string;
  adapter: ProviderAdapter;
  /**
   * After the provider refused the credential (401): forget it and resolve it again; a new
   * adapter when that gives a different value, else undefined.
   */
  reauthorize: () => Promise<ProviderAdapter | undefined>;
}

/** The base URL a provider reads from the environment, if it reads one and it is set. */
async function baseUrlFromEnv(
  ctx: Pick<HostBase, 'lua' | 'notify' | 'sdks' | 'secrets'>,
  name: string | undefined,
  env: BufferSettings['env'],
): Promise<string | undefined> {
  if (name === undefined) return undefined;
  // The variables Neovim sends with the editor's state are known; any other is asked for.
  if (KNOWN_ENV.includes(name)) return env[name];
  return (await ctx.lua.call('env.first', { names: [name] }))?.value;
}

/** The connection `config` asks for, or undefined after telling the user why there is none. */
export async function connectProvider(
  ctx: Pick<HostBase, 'lua' | 'notify' | 'sdks' | 'secrets'>,
  config: Config,
  env: BufferSettings['env'],
): Promise<ProviderConnection | undefined> {
  const providerName = config.provider;
  const entry = PROVIDERS[providerName];
  const fail = (message: string): void => {
    ctx.notify.error(`${providerName}: ${message}`);
  };
  if (entry === undefined) {
    fail(`unknown provider (available: ${[...Object.keys(PROVIDERS), 'acp'].sort().join(', ')})`);
    return undefined;
  }
  const parameters = config.parameters;
  const specific = (parameters[providerName] ?? {}) as ProviderParameters;
  const baseURL = specific.base_url ?? (await baseUrlFromEnv(ctx, entry.baseUrlEnv, env));
  const missing = entry.missing?.({ parameters: specific, baseURL });
  if (missing !== undefined) {
    fail(missing);
    return undefined;
  }
  const spec = entry.credential(specific);
  const secretsConfig = config.secrets;
  const resolveCredential = async (
    quiet = false,
  ): Promise<{ ok: true; value: string | undefined } | { ok: false }> => {
    if (spec === undefined) return { ok: true, value: undefined };
    const optional = entry.credentialOptional === true;
    const found = await ctx.secrets.resolve(spec, {
      env,
      known: KNOWN_ENV,
      ...(secretsConfig === undefined ? {} : { config: secretsConfig }),
      quick: optional,
    });
    if (found.ok) return { ok: true, value: found.value };
    if (optional) return { ok: true, value: undefined };
    if (!quiet) fail(found.message);
    return { ok: false };
  };
  const resolved = await resolveCredential();
  if (!resolved.ok) return undefined;
  const credential = resolved.value;
  trace('send:env');
  const model = config.model ?? entry.defaultModel;
  if (model === undefined) {
    fail('set the model to use (model = "…" in setup() or the frontmatter)');
    return undefined;
  }
  const timeout = parameters.timeout;
  // The stream watchdog (src/core/provider/watchdog.ts): the provider's own value wins.
  const idle = [specific['stream_idle_timeout'], parameters['stream_idle_timeout']].find(
    (value): value is number => typeof value === 'number' && value >= 1,
  );
  const connect = (value: string | undefined): ProviderAdapter =>
    entry.create(
      {
        credential: value ?? '',
        baseURL,
        parameters: specific,
        // NOTE: the send retries by itself (below), so that each attempt shows in the indicator.
        maxRetries: 0,
        // Clamped to what a timer takes (src/core/util/timer.ts): the schema bounds them too.
        timeoutMs: secondsMs(timeout),
        streamIdleMs: idle === undefined ? DEFAULT_STREAM_IDLE_MS : secondsMs(idle),
      },
      ctx.sdks,
    );
  const adapter = connect(credential);
  /** After a 401: the credential again, past the cache; a new adapter when it changed. */
  const reauthorize = async (): Promise<ProviderAdapter | undefined> => {
    if (spec === undefined) return undefined;
    ctx.secrets.invalidate(spec.kind, spec.service);
    const again = await resolveCredential(true);
    if (!again.ok || again.value === undefined || again.value === credential) return undefined;
    return connect(again.value);
  };
  return { providerName, model, adapter, reauthorize };
}
