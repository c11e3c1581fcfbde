// The built-in credential resolvers: the environment (Neovim's), the Linux Secret Service
// (`secret-tool`), the macOS Keychain (`security`) and gcloud for Google access tokens. Programs
// and the environment are ports, so the chain runs in unit tests without either.
import { type CredentialResolver, type CredentialSpec, environmentVariables } from './chain.js';

export interface ProgramResult {
  code: number;
  stdout: string;
}

export interface SecretsPorts {
  /** The first set, non-empty variable of `names` in Neovim's environment. */
  envFirst(names: string[]): Promise<{ name: string; value: string } | undefined>;
  /**
   * Run a program (no shell); undefined when it cannot be started (not installed). Never
   * throws for a non-zero exit.
   */
  run(
    file: string,
    args: string[],
    options?: { env?: Record<string, string>; timeoutMs?: number },
  ): Promise<ProgramResult | undefined>;
  /** Write `content` to a private temporary file (mode 0600); remove it when done. */
  tempFile(content: string): Promise<{ path: string; remove(): Promise<void> }>;
  platform: string;
  /** `secrets.<name>` from the configuration (e.g. `secrets.gcloud.path`). */
  config(name: string): Record<string, unknown> | undefined;
}

/** Kinds stored under their own name; others are looked up again under the legacy `api`. */
const PLAIN_KINDS: ReadonlySet<string> = new Set(['api', 'access_token']);

function keyringKinds(spec: CredentialSpec): string[] {
  return PLAIN_KINDS.has(spec.kind) ? [spec.kind] : [spec.kind, 'api'];
}

/** `{SERVICE}_{KIND}`, then the credential's aliases, in Neovim's environment. */
export function environmentResolver(ports: SecretsPorts): CredentialResolver {
  return {
    name: 'environment',
    priority: 100,
    supports: () => true,
    async resolve(spec, ctx) {
      const names = environmentVariables(spec);
      const found = await ports.envFirst(names);
      if (found === undefined) {
        ctx.diagnostic(`${names.join(', ')} not set`);
        return undefined;
      }
      // NOTE: not cached: reading the environment is free, and `:let $X = …` then takes effect
      // at the next send.
      return { value: found.value, ttl: 0 };
    },
  };
}

/** A keyring reached through one program, looked up under each of `keyringKinds`. */
interface Keyring {
  name: string;
  /** The `process.platform` it runs on, and that platform's name for the diagnostic. */
  platform: string;
  platformName: string;
  program: string;
  args(service: string, kind: string): string[];
  /** How to store the missing entry, for the diagnostic. */
  storeHint(spec: CredentialSpec): string;
}

function keyringResolver(ports: SecretsPorts, keyring: Keyring): CredentialResolver {
  return {
    name: keyring.name,
    priority: 50,
    supports(_spec, ctx) {
      if (ports.platform !== keyring.platform) {
        ctx.diagnostic(`only on ${keyring.platformName}`);
        return false;
      }
      return true;
    },
    async resolve(spec, ctx) {
      for (const kind of keyringKinds(spec)) {
        const result = await ports.run(keyring.program, keyring.args(spec.service, kind), {
          timeoutMs: 10_000,
        });
        if (result === undefined) {
          ctx.diagnostic(`${keyring.program} not found on PATH`);
          return undefined;
        }
        const value = result.stdout.trim();
        if (result.code === 0 && value !== '') return { value };
      }
      ctx.diagnostic(`no entry (${keyring.storeHint(spec)})`);
      return undefined;
    },
  };
}

/** GNOME Keyring and friends: `secret-tool lookup service <service> key <kind>`. */
export function secretToolResolver(ports: SecretsPorts): CredentialResolver {
  return keyringResolver(ports, {
    name: 'secret_tool',
    platform: 'linux',
    platformName: 'Linux',
    program: 'secret-tool',
    args: (service, kind) => ['lookup', 'service', service, 'key', kind],
    storeHint: (spec) =>
      `secret-tool store --label='${spec.description}' service ${spec.service} key ${spec.kind}`,
  });
}

/** The macOS Keychain: `security find-generic-password -s <service> -a <kind> -w`. */
export function keychainResolver(ports: SecretsPorts): CredentialResolver {
  return keyringResolver(ports, {
    name: 'keychain',
    platform: 'darwin',
    platformName: 'macOS',
    program: 'security',
    args: (service, kind) => ['find-generic-password', '-s', service, '-a', kind, '-w'],
    storeHint: (spec) => `security add-generic-password -s ${spec.service} -a ${spec.kind} -w`,
  });
}

/** Whether `text` is a Google service-account key file's JSON. */
function isServiceAccount(text: string): boolean {
  try {
    const parsed = JSON.parse(text) as { type?: unknown };
    return parsed.type === 'service_account';
  } catch {
    return false;
  }
}

/**
 * Google access tokens from gcloud: with the service account the chain has for the service
 * (`service_account:<service>`, e.g. $VERTEX_SERVICE_ACCOUNT holding the key file's JSON), else
 * with gcloud's own login. Tokens live an hour.
 */
export function gcloudResolver(ports: SecretsPorts): CredentialResolver {
  return {
    name: 'gcloud',
    priority: 25,
    supports(spec, ctx) {
      if (spec.kind !== 'access_token') {
        ctx.diagnostic('only for access tokens');
        return false;
      }
      return true;
    },
    async resolve(spec, ctx) {
      const configured = ports.config('gcloud')?.['path'];
      const gcloud = typeof configured === 'string' && configured !== '' ? configured : 'gcloud';
      const account = await ctx.lookup({
        kind: 'service_account',
        service: spec.service,
        description: `${spec.service} service account`,
      });
      const file =
        account !== undefined && isServiceAccount(account)
          ? await ports.tempFile(account)
          : undefined;
      try {
        const result = await ports.run(gcloud, ['auth', 'print-access-token'], {
          timeoutMs: 30_000,
          ...(file === undefined ? {} : { env: { GOOGLE_APPLICATION_CREDENTIALS: file.path } }),
        });
        if (result === undefined) {
          ctx.diagnostic(`${gcloud}: executable not found (set secrets.gcloud.path)`);
          return undefined;
        }
        const token = result.stdout.trim();
        if (result.code !== 0 || token === '') {
          ctx.diagnostic(
            `${gcloud} auth print-access-token failed (exit ${String(result.code)}); run gcloud auth login`,
          );
          return undefined;
        }
        return { value: token, ttl: 3600 };
      } finally {
        await file?.remove();
      }
    },
  };
}

export function builtinResolvers(ports: SecretsPorts): CredentialResolver[] {
  return [
    environmentResolver(ports),
    secretToolResolver(ports),
    keychainResolver(ports),
    gcloudResolver(ports),
  ];
}
