// The credential chain without Neovim: order, caching with time to live, the built-in resolvers
// through fake ports, and the message when nothing resolves.
import { describe, expect, it } from 'vitest';
import {
  builtinResolvers,
  gcloudResolver,
  type SecretsPorts,
} from '../../src/core/secrets/builtins.js';
import {
  CredentialChain,
  type CredentialResolver,
  type CredentialSpec,
  environmentVariables,
} from '../../src/core/secrets/chain.js';

const ANTHROPIC: CredentialSpec = {
  kind: 'api_key',
  service: 'anthropic',
  description: 'Anthropic API key',
};
const VERTEX: CredentialSpec = {
  kind: 'access_token',
  service: 'vertex',
  description: 'Vertex AI access token',
  ttl: 3600,
  ttlScale: 0.925,
  aliases: ['VERTEX_AI_ACCESS_TOKEN'],
};

function fixed(name: string, priority: number, value: string | undefined, ttl?: number) {
  const calls: string[] = [];
  const resolver: CredentialResolver = {
    name,
    priority,
    supports: () => true,
    resolve: (spec) => {
      calls.push(`${spec.kind}:${spec.service}`);
      if (value === undefined) return Promise.resolve(undefined);
      return Promise.resolve(ttl === undefined ? { value } : { value, ttl });
    },
  };
  return { resolver, calls };
}

interface Ran {
  file: string;
  args: string[];
  env?: Record<string, string>;
}

function ports(
  overrides: Partial<SecretsPorts> & {
    env?: Record<string, string>;
    programs?: Record<string, (args: string[], env?: Record<string, string>) => string | number>;
  } = {},
): SecretsPorts & { ran: Ran[]; removed: string[] } {
  const ran: Ran[] = [];
  const removed: string[] = [];
  const env = overrides.env ?? {};
  const programs = overrides.programs ?? {};
  return {
    ran,
    removed,
    envFirst: (names) => {
      for (const name of names) {
        const value = env[name];
        if (value !== undefined && value !== '') return Promise.resolve({ name, value });
      }
      return Promise.resolve(undefined);
    },
    run: (file, args, options) => {
      ran.push({ file, args, ...(options?.env === undefined ? {} : { env: options.env }) });
      const program = programs[file];
      if (program === undefined) return Promise.resolve(undefined);
      const out = program(args, options?.env);
      return Promise.resolve(
        typeof out === 'number' ? { code: out, stdout: '' } : { code: 0, stdout: out },
      );
    },
    tempFile: (content) => {
      const path = `/tmp/fake-${String(content.length)}.json`;
      return Promise.resolve({
        path,
        remove: () => {
          removed.push(path);
          return Promise.resolve();
        },
      });
    },
    platform: overrides.platform ?? 'linux',
    config: overrides.config ?? (() => undefined),
  };
}

/** A chain of the built-in resolvers over `fake` ports. */
function builtinChain(fake: Parameters<typeof builtinResolvers>[0]): CredentialChain {
  const chain = new CredentialChain();
  for (const resolver of builtinResolvers(fake)) chain.register(resolver);
  return chain;
}

/** What the chain answers when `resolver` found `value`. */
const resolvedBy = (value: string, resolver: string) => ({ ok: true, value, resolver });
describe('the credential chain', () => {
  it('asks resolvers by priority (ties by name); the first value wins', async () => {
    const chain = new CredentialChain();
    const low = fixed('low', 10, 'from-low');
    const b = fixed('b', 60, undefined);
    const a = fixed('a', 60, 'from-a');
    const high = fixed('high', 100, undefined);
    for (const entry of [low, b, a, high]) chain.register(entry.resolver);
    expect(chain.list().map((r) => r.name)).toEqual(['high', 'a', 'b', 'low']);
    expect(await chain.resolve(ANTHROPIC)).toEqual(resolvedBy('from-a', 'a'));
    expect(high.calls).toHaveLength(1);
    expect(b.calls).toHaveLength(0);
    expect(low.calls).toHaveLength(0);
  });

  it('caches per kind:service until invalidated; invalidate_all clears everything', async () => {
    const chain = new CredentialChain();
    const only = fixed('only', 50, 'v1');
    chain.register(only.resolver);
    await chain.resolve(ANTHROPIC);
    await chain.resolve(ANTHROPIC);
    expect(only.calls).toEqual(['api_key:anthropic']);
    await chain.resolve({ ...ANTHROPIC, service: 'openai', description: 'OpenAI API key' });
    expect(only.calls).toHaveLength(2);
    chain.invalidate('api_key', 'anthropic');
    await chain.resolve(ANTHROPIC);
    expect(only.calls).toHaveLength(3);
    chain.invalidateAll();
    await chain.resolve(ANTHROPIC);
    await chain.resolve({ ...ANTHROPIC, service: 'openai', description: 'OpenAI API key' });
    expect(only.calls).toHaveLength(5);
  });

  it('expires a value after ttl × ttl_scale; a resolver ttl wins over the credential ttl; 0 is never cached', async () => {
    let now = 1_000_000;
    /** A chain on the test's clock that holds only `entry`. */
    const chainOf = (entry: ReturnType<typeof fixed>): CredentialChain => {
      const chain = new CredentialChain(() => now);
      chain.register(entry.resolver);
      return chain;
    };
    /** Moves the clock on by `ms`, then asks `chain` for `spec`. */
    const resolveAfter = async (ms: number, chain: CredentialChain, spec: CredentialSpec) => {
      now += ms;
      await chain.resolve(spec);
    };
    const token = fixed('token', 50, 'tok');
    const chain = chainOf(token);
    await chain.resolve(VERTEX);
    // 3600 s × 0.925 = 3330 s.
    await resolveAfter(3329 * 1000, chain, VERTEX);
    expect(token.calls).toHaveLength(1);
    await resolveAfter(2000, chain, VERTEX);
    expect(token.calls).toHaveLength(2);

    const own = fixed('own', 50, 'x', 100);
    const short = chainOf(own);
    await short.resolve(VERTEX);
    await resolveAfter(92 * 1000, short, VERTEX);
    expect(own.calls).toHaveLength(1);
    await resolveAfter(1000, short, VERTEX); // 100 × 0.925 = 92.5 s
    expect(own.calls).toHaveLength(2);

    const env = fixed('env', 50, 'e', 0);
    const never = chainOf(env);
    await never.resolve(ANTHROPIC);
    await never.resolve(ANTHROPIC);
    expect(env.calls).toHaveLength(2);
  });

  it('shares one resolution between callers asking at the same time', async () => {
    const chain = new CredentialChain();
    const only = fixed('only', 50, 'v', 0);
    chain.register(only.resolver);
    const [one, two] = await Promise.all([chain.resolve(ANTHROPIC), chain.resolve(ANTHROPIC)]);
    expect(one).toEqual(two);
    expect(only.calls).toHaveLength(1);
  });

  it('treats a resolver that throws as one that could not help, and says why', async () => {
    const chain = new CredentialChain();
    chain.register({
      name: 'broken',
      priority: 90,
      supports: () => true,
      resolve: () => Promise.reject(new Error('vault is sealed')),
    });
    chain.register(fixed('backup', 10, 'ok').resolver);
    expect(await chain.resolve(ANTHROPIC)).toMatchObject({ ok: true, resolver: 'backup' });
    const alone = new CredentialChain();
    alone.register({
      name: 'broken',
      priority: 90,
      supports: () => {
        throw new Error('cannot tell');
      },
      resolve: () => Promise.resolve({ value: 'never' }),
    });
    const failed = await alone.resolve(ANTHROPIC);
    expect(failed).toMatchObject({ ok: false });
    if (!failed.ok) expect(failed.message).toContain('broken: cannot tell');
  });

  it('lists every resolver and its reason when nothing resolves', async () => {
    const chain = builtinChain(ports({ platform: 'linux' }));
    const failed = await chain.resolve(ANTHROPIC);
    expect(failed.ok).toBe(false);
    if (failed.ok) return;
    expect(failed.message.split('\n')).toEqual([
      'no credential for the Anthropic API key (api_key:anthropic). Tried:',
      '  environment: ANTHROPIC_API_KEY not set',
      '  keychain: only on macOS',
      '  secret_tool: secret-tool not found on PATH',
      '  gcloud: only for access tokens',
      'Set $ANTHROPIC_API_KEY (in the shell that starts Neovim, or with :let $ANTHROPIC_API_KEY = …), or see :help flemma-credentials.',
    ]);
  });
});

describe('the built-in resolvers', () => {
  it('environment: {SERVICE}_{KIND}, then the aliases; empty values do not count', async () => {
    expect(environmentVariables(VERTEX)).toEqual(['VERTEX_ACCESS_TOKEN', 'VERTEX_AI_ACCESS_TOKEN']);
    const chain = builtinChain(
      ports({ env: { VERTEX_ACCESS_TOKEN: '', VERTEX_AI_ACCESS_TOKEN: 'from-alias' } }),
    );
    expect(await chain.resolve(VERTEX)).toEqual(resolvedBy('from-alias', 'environment'));
  });

  it('secret_tool: looks up service and kind, then the legacy "api" key', async () => {
    const fake = ports({
      programs: {
        'secret-tool': (args) => (args[4] === 'api' ? 'legacy-key\n' : 1),
      },
    });
    const chain = builtinChain(fake);
    expect(await chain.resolve(ANTHROPIC)).toEqual(resolvedBy('legacy-key', 'secret_tool'));
    expect(fake.ran.map((r) => r.args.join(' '))).toEqual([
      'lookup service anthropic key api_key',
      'lookup service anthropic key api',
    ]);
  });

  it('keychain: security find-generic-password on macOS only', async () => {
    const fake = ports({
      platform: 'darwin',
      programs: { security: () => 'mac-key' },
    });
    const chain = builtinChain(fake);
    expect(await chain.resolve(ANTHROPIC)).toMatchObject({
      value: 'mac-key',
      resolver: 'keychain',
    });
    expect(fake.ran[0]).toEqual({
      file: 'security',
      args: ['find-generic-password', '-s', 'anthropic', '-a', 'api_key', '-w'],
    });
  });

  it('gcloud: only access tokens; a service account from the chain goes through a private file', async () => {
    const account = JSON.stringify({ type: 'service_account', client_email: 'x@y' });
    const fake = ports({
      env: { VERTEX_SERVICE_ACCOUNT: account },
      programs: {
        '/opt/gcloud': (_args, env) =>
          env?.['GOOGLE_APPLICATION_CREDENTIALS'] === undefined ? 'user-token' : 'sa-token\n',
      },
      config: (name) => (name === 'gcloud' ? { path: '/opt/gcloud' } : undefined),
    });
    const chain = builtinChain(fake);
    expect(await chain.resolve(VERTEX)).toEqual(resolvedBy('sa-token', 'gcloud'));
    const call = fake.ran.find((r) => r.file === '/opt/gcloud');
    expect(call?.args).toEqual(['auth', 'print-access-token']);
    expect(call?.env?.['GOOGLE_APPLICATION_CREDENTIALS']).toMatch(/^\/tmp\/fake-/);
    expect(fake.removed).toEqual([call?.env?.['GOOGLE_APPLICATION_CREDENTIALS']]);
  });

  it('gcloud: says when the executable is missing', async () => {
    const chain = new CredentialChain();
    chain.register(gcloudResolver(ports()));
    const failed = await chain.resolve(VERTEX);
    expect(failed.ok).toBe(false);
    if (!failed.ok) {
      expect(failed.message).toContain(
        'gcloud: gcloud: executable not found (set secrets.gcloud.path)',
      );
    }
  });
});
