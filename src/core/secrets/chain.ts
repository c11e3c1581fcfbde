// The credential resolver chain: each provider describes the credential it needs (kind and
// service), and resolvers are asked in priority order until one has it. Results are cached per
// `kind:service` with their time to live; when nothing resolves, the failure lists every
// resolver that was asked and why it could not help.
//
// NOTE: a credential's value must never reach a log, a message or an error: nothing here puts
// it in a string other than the result itself.

/** What a provider needs: `{kind, service}` is the cache key (`api_key:anthropic`). */
export interface CredentialSpec {
  kind: string;
  service: string;
  /** For people: "Anthropic API key". */
  description: string;
  /** Seconds the value stays good (a resolver's own `ttl` wins); none: until invalidated. */
  ttl?: number;
  /** Multiplies the time to live (e.g. 0.925 to refresh a token before it expires). */
  ttlScale?: number;
  /** Environment variables tried after the conventional `{SERVICE}_{KIND}`. */
  aliases?: string[];
}

export interface ResolvedSecret {
  value: string;
  /** Seconds; 0 means "do not cache" (reading it again is free). */
  ttl?: number;
}

/** What a resolver is given besides the credential. */
export interface ResolverContext {
  /** Say why this resolver could not help (shown when nothing resolves). */
  diagnostic(message: string): void;
  /** Resolve another credential through the chain (without this resolver). */
  lookup(spec: CredentialSpec): Promise<string | undefined>;
}

export interface CredentialResolver {
  name: string;
  priority: number;
  /** Whether to ask it for this credential (a diagnostic may say why not). */
  supports(spec: CredentialSpec, ctx: ResolverContext): boolean | Promise<boolean>;
  resolve(spec: CredentialSpec, ctx: ResolverContext): Promise<ResolvedSecret | undefined>;
}

export type Resolution =
  | { ok: true; value: string; resolver: string }
  | { ok: false; message: string; tried: { resolver: string; why: string[] }[] };

interface Cached {
  value: string;
  resolver: string;
  /** `Date.now()` after which the value is stale; undefined: never. */
  expiresAt: number | undefined;
}

export function cacheKey(spec: Pick<CredentialSpec, 'kind' | 'service'>): string {
  return `${spec.kind}:${spec.service}`;
}

/** The conventional variable of a credential: `{SERVICE}_{KIND}`, upper case. */
export function conventionalVariable(spec: Pick<CredentialSpec, 'kind' | 'service'>): string {
  return `${spec.service}_${spec.kind}`.toUpperCase().replace(/[^A-Z0-9_]/g, '_');
}

/** Every variable the environment resolver tries, in order. */
export function environmentVariables(spec: CredentialSpec): string[] {
  return [...new Set([conventionalVariable(spec), ...(spec.aliases ?? [])])];
}

export class CredentialChain {
  private readonly resolvers = new Map<string, CredentialResolver>();
  private readonly cache = new Map<string, Cached>();
  private readonly inflight = new Map<string, Promise<Resolution>>();

  constructor(private readonly now: () => number = Date.now) {}

  /** Add or replace (by name) a resolver. */
  register(resolver: CredentialResolver): void {
    this.resolvers.set(resolver.name, resolver);
  }

  /** Remove a resolver; returns whether it existed. */
  unregister(name: string): boolean {
    return this.resolvers.delete(name);
  }

  /** The resolvers, highest priority first, ties by name. */
  list(): CredentialResolver[] {
    return [...this.resolvers.values()].sort((a, b) =>
      a.priority !== b.priority ? b.priority - a.priority : a.name < b.name ? -1 : 1,
    );
  }

  invalidate(kind: string, service: string): void {
    this.cache.delete(cacheKey({ kind, service }));
  }

  invalidateAll(): void {
    this.cache.clear();
  }

  /** Whether a value for this credential is cached and fresh. */
  isCached(spec: Pick<CredentialSpec, 'kind' | 'service'>): boolean {
    return this.fresh(cacheKey(spec)) !== undefined;
  }

  /** The credential's value: from the cache, else from the first resolver that has it. */
  resolve(
    spec: CredentialSpec,
    options: { only?: (name: string) => boolean } = {},
  ): Promise<Resolution> {
    const key = cacheKey(spec);
    const hit = this.fresh(key);
    if (hit !== undefined) {
      return Promise.resolve({ ok: true, value: hit.value, resolver: hit.resolver });
    }
    const pending = this.inflight.get(key);
    if (pending !== undefined && options.only === undefined) return pending;
    const started = this.run(spec, options.only ?? (() => true), new Set());
    if (options.only === undefined) {
      this.inflight.set(key, started);
      void started.finally(() => this.inflight.delete(key));
    }
    return started;
  }

  private fresh(key: string): Cached | undefined {
    const hit = this.cache.get(key);
    if (hit === undefined) return undefined;
    if (hit.expiresAt !== undefined && this.now() >= hit.expiresAt) {
      this.cache.delete(key);
      return undefined;
    }
    return hit;
  }

  private async run(
    spec: CredentialSpec,
    only: (name: string) => boolean,
    excluded: ReadonlySet<string>,
  ): Promise<Resolution> {
    const tried: { resolver: string; why: string[] }[] = [];
    for (const resolver of this.list()) {
      if (excluded.has(resolver.name) || !only(resolver.name)) continue;
      const why: string[] = [];
      const ctx: ResolverContext = {
        diagnostic: (message) => {
          why.push(message);
        },
        lookup: async (other) => {
          const hit = this.fresh(cacheKey(other));
          if (hit !== undefined) return hit.value;
          const found = await this.run(other, only, new Set([...excluded, resolver.name]));
          return found.ok ? found.value : undefined;
        },
      };
      let result: ResolvedSecret | undefined;
      try {
        if (!(await resolver.supports(spec, ctx))) {
          tried.push({ resolver: resolver.name, why: why.length > 0 ? why : ['not applicable'] });
          continue;
        }
        result = await resolver.resolve(spec, ctx);
      } catch (error) {
        // A resolver that fails could not help; its message (never a value) says why.
        why.push(error instanceof Error ? error.message : String(error));
        result = undefined;
      }
      if (result !== undefined && typeof result.value === 'string' && result.value !== '') {
        this.remember(spec, resolver.name, result);
        return { ok: true, value: result.value, resolver: resolver.name };
      }
      tried.push({ resolver: resolver.name, why: why.length > 0 ? why : ['found nothing'] });
    }
    return { ok: false, message: failureMessage(spec, tried), tried };
  }

  private remember(spec: CredentialSpec, resolver: string, result: ResolvedSecret): void {
    const base = result.ttl ?? spec.ttl;
    if (base === 0) return;
    const seconds = base === undefined ? undefined : base * (spec.ttlScale ?? 1);
    this.cache.set(cacheKey(spec), {
      value: result.value,
      resolver,
      expiresAt: seconds === undefined ? undefined : this.now() + seconds * 1000,
    });
  }
}

/** The notification when nothing resolves: each resolver asked and why it could not help. */
export function failureMessage(
  spec: CredentialSpec,
  tried: readonly { resolver: string; why: string[] }[],
): string {
  const lines = [`no credential for the ${spec.description} (${cacheKey(spec)}). Tried:`];
  for (const entry of tried) lines.push(`  ${entry.resolver}: ${entry.why.join('; ')}`);
  if (tried.length === 0) lines.push('  (no resolver is registered)');
  const variable = environmentVariables(spec)[0] ?? conventionalVariable(spec);
  lines.push(
    `Set $${variable} (in the shell that starts Neovim, or with :let $${variable} = …), or see :help flemma-credentials.`,
  );
  return lines.join('\n');
}
