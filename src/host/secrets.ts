// The credential chain as the host runs it: the built-in resolvers with their ports (Neovim's
// environment, programs run with execa, private temporary files) and the resolvers users
// register in Lua (`require("flemma.secrets").register`), which are called over RPC.
import { randomBytes } from 'node:crypto';
import { rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { builtinResolvers, type SecretsPorts } from '../core/secrets/builtins.js';
import {
  cacheKey,
  CredentialChain,
  type CredentialResolver,
  type CredentialSpec,
  type Resolution,
} from '../core/secrets/chain.js';
import { runProcess } from '../core/tools/process.js';
import type { LuaBridge } from '../editor/lua.js';
import type { LuaSecretsAnswer as LuaAnswer, LuaSecretsSpec } from '../editor/protocol/wire.js';
import type { FileLogger } from './log.js';
import { notifier } from './notifier.js';

/** A resolver registered in Lua: the host knows its name and priority. */
export type { LuaSecretsSpec };

/** How long a resolution may take before the user is told it is under way. */
const SLOW_MS = 600;

export interface ResolveOptions {
  /** Neovim's environment as the caller already knows it (names absent: not set). */
  env?: Record<string, string>;
  /** Variables `env` answers for (others are asked of Neovim). */
  known?: readonly string[];
  /** `secrets` of the buffer's configuration. */
  config?: Record<string, unknown>;
  /** Ask only the environment and Lua resolvers (for credentials a provider can go without). */
  quick?: boolean;
}

export class SecretsService {
  readonly chain = new CredentialChain();
  private readonly builtinNames: ReadonlySet<string>;
  private luaNames = new Set<string>();
  private options: ResolveOptions = {};
  private readonly notify;

  constructor(
    private readonly lua: LuaBridge,
    private readonly logger: FileLogger,
  ) {
    this.notify = notifier({ lua });
    const ports: SecretsPorts = {
      envFirst: (names) => this.envFirst(names),
      run: async (file, args, options) => {
        const result = await runProcess([file, ...args], {
          cwd: tmpdir(),
          ...(options?.env === undefined ? {} : { env: options.env }),
          timeoutMs: options?.timeoutMs ?? 10_000,
          drainMs: 50,
        });
        if (result.startError !== undefined) return undefined;
        return { code: result.exitCode ?? -1, stdout: result.output };
      },
      tempFile: async (content) => {
        const path = join(tmpdir(), `flemma-credential-${randomBytes(8).toString('hex')}.json`);
        await writeFile(path, content, { mode: 0o600, flag: 'wx' });
        return { path, remove: () => rm(path, { force: true }) };
      },
      platform: process.platform,
      config: (name) => {
        const value = this.options.config?.[name];
        return value !== null && typeof value === 'object'
          ? (value as Record<string, unknown>)
          : undefined;
      },
    };
    const builtins = builtinResolvers(ports);
    this.builtinNames = new Set(builtins.map((resolver) => resolver.name));
    for (const resolver of builtins) this.chain.register(resolver);
  }

  /** Lua's resolvers (names and priorities); replaces the previous set. */
  defineFromLua(specs: readonly LuaSecretsSpec[]): void {
    for (const name of this.luaNames) this.chain.unregister(name);
    this.luaNames = new Set();
    for (const spec of specs) {
      if (typeof spec.name !== 'string' || spec.name === '') continue;
      this.luaNames.add(spec.name);
      this.chain.register(this.luaResolver(spec));
    }
  }

  /**
   * The credential's value, or why there is none (a message listing every resolver asked).
   * Tells the user when it takes long (a keyring prompt, gcloud).
   */
  async resolve(spec: CredentialSpec, options: ResolveOptions = {}): Promise<Resolution> {
    // What Neovim's environment holds under secret-looking names never reaches a log either
    // (`:let $X = …` after the host started).
    if (options.env !== undefined) this.logger.redactor.addEnvironment(options.env);
    if (this.chain.isCached(spec)) {
      const cached = await this.chain.resolve(spec);
      if (cached.ok) this.logger.redactor.add(cached.value);
      return cached;
    }
    this.options = options;
    const slow = setTimeout(() => {
      this.notify.info(`Resolving ${spec.description}…`);
    }, SLOW_MS);
    try {
      const quick = options.quick === true;
      const result = await this.chain.resolve(
        spec,
        quick ? { only: (name) => name === 'environment' || this.luaNames.has(name) } : {},
      );
      if (result.ok) {
        // Before anything can log it: the log, the middleware and the audit file redact it.
        this.logger.redactor.add(result.value);
        this.logger.info(`credential ${spec.kind}:${spec.service} from ${result.resolver}`);
      }
      return result;
    } finally {
      clearTimeout(slow);
    }
  }

  invalidate(kind: string, service: string): void {
    this.chain.invalidate(kind, service);
  }

  invalidateAll(): void {
    this.chain.invalidateAll();
  }

  /** For `:Flemma status`: the resolvers in the order they are asked. */
  describe(): { name: string; priority: number; builtin: boolean }[] {
    return this.chain.list().map((resolver) => ({
      name: resolver.name,
      priority: resolver.priority,
      builtin: this.builtinNames.has(resolver.name),
    }));
  }

  private async envFirst(names: string[]): Promise<{ name: string; value: string } | undefined> {
    const { env, known } = this.options;
    if (env !== undefined && known !== undefined && names.every((name) => known.includes(name))) {
      for (const name of names) {
        const value = env[name];
        if (value !== undefined && value !== '') return { name, value };
      }
      return undefined;
    }
    const answer = await this.lua.call('env.first', { names });
    if (answer === null || typeof answer.value !== 'string' || answer.value === '') {
      return undefined;
    }
    return { name: answer.name, value: answer.value };
  }

  private luaResolver(spec: LuaSecretsSpec): CredentialResolver {
    // One call answers both questions: whether it handles the credential, and the value.
    const answers = new Map<string, LuaAnswer | undefined>();
    return {
      name: spec.name,
      priority: typeof spec.priority === 'number' ? spec.priority : 50,
      supports: async (credential, ctx) => {
        const answer =
          (await this.lua.call('secrets.resolve', {
            name: spec.name,
            credential: {
              kind: credential.kind,
              service: credential.service,
              description: credential.description,
              ttl: credential.ttl ?? null,
              aliases: credential.aliases ?? [],
            },
          })) ?? undefined;
        answers.set(cacheKey(credential), answer);
        for (const message of answer?.diagnostics ?? []) ctx.diagnostic(message);
        if (answer?.error !== undefined) {
          ctx.diagnostic(answer.error);
          return true;
        }
        return answer?.supported !== false;
      },
      resolve: (credential) => {
        const answer = answers.get(cacheKey(credential));
        answers.delete(cacheKey(credential));
        const value = answer?.value;
        if (typeof value !== 'string' || value === '') return Promise.resolve(undefined);
        return Promise.resolve(
          typeof answer?.ttl === 'number' ? { value, ttl: answer.ttl } : { value },
        );
      },
    };
  }
}
