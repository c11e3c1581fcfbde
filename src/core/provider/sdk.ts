// Lazy loaders for the provider SDKs. None is imported at start-up: each is loaded (once) the
// first time a provider needs it, so that the host starts fast.

const LOADERS = {
  anthropic: () => import('@anthropic-ai/sdk'),
  openai: () => import('openai'),
  genai: () => import('@google/genai'),
};

export type SdkName = keyof typeof LOADERS;
export type SdkModule<N extends SdkName> = Awaited<ReturnType<(typeof LOADERS)[N]>>;

export const SDK_NAMES: readonly SdkName[] = ['anthropic', 'genai', 'openai'];

/** Provider clients kept per host (one per provider and connection settings in practice). */
const MAX_CLIENTS = 8;

export interface SdkLoadReport {
  ok: boolean;
  load_ms: number;
  error?: string;
}

/** Loads each SDK at most once per instance; the host keeps one. */
export class SdkLoader {
  private readonly loaded = new Map<SdkName, Promise<unknown>>();

  load<N extends SdkName>(name: N): Promise<SdkModule<N>> {
    let pending = this.loaded.get(name);
    if (pending === undefined) {
      pending = LOADERS[name]();
      this.loaded.set(name, pending);
      // A failed load may succeed later (e.g. after a rebuild): do not keep the rejection.
      pending.catch(() => this.loaded.delete(name));
    }
    return pending as Promise<SdkModule<N>>;
  }

  private readonly clients = new Map<string, unknown>();

  /**
   * The client made by `create` for these connection `options`, made once and kept: a client is
   * costly to build (several milliseconds of the event loop for each request otherwise), and a
   * kept one reuses its connections. Keyed by `kind` and the options (credentials included; in
   * memory only); the least recently used goes beyond `MAX_CLIENTS`.
   */
  client<T>(kind: string, options: object, create: () => T): T {
    const key = `${kind}\0${JSON.stringify(options)}`;
    if (this.clients.has(key)) {
      const kept = this.clients.get(key) as T;
      this.clients.delete(key);
      this.clients.set(key, kept);
      return kept;
    }
    const made = create();
    this.clients.set(key, made);
    while (this.clients.size > MAX_CLIENTS) {
      const oldest = this.clients.keys().next().value;
      if (oldest === undefined) break;
      this.clients.delete(oldest);
    }
    return made;
  }

  isLoaded(name: SdkName): boolean {
    return this.loaded.has(name);
  }

  /** Load every SDK one after another and time each (for :checkhealth). */
  async probe(
    now: () => number = () => performance.now(),
  ): Promise<Record<SdkName, SdkLoadReport>> {
    const report = {} as Record<SdkName, SdkLoadReport>;
    for (const name of SDK_NAMES) {
      const started = now();
      try {
        await this.load(name);
        report[name] = { ok: true, load_ms: now() - started };
      } catch (error) {
        report[name] = {
          ok: false,
          load_ms: now() - started,
          error: error instanceof Error ? error.message : String(error),
        };
      }
    }
    return report;
  }
}
