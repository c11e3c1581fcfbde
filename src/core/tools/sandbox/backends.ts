// Sandbox backends: the registry that picks one (the built-in bubblewrap backend is bwrap.ts).
//
// Decisions:
// - A backend is `{name, priority, available(settings), wrap(argv, policy, settings)}`, where
//   `settings` is its own table from `sandbox.backends.<name>` (an empty object when the user
//   set nothing). Both functions may answer synchronously or with a promise, because a backend
//   defined in Lua answers over RPC. `available` may answer `true`/`false` as well as
//   `{ok, error}`; a throw, a rejection or any other answer is reported as unavailable.
// - The registry lists backends by priority, highest first, name as the tie-breaker, so the
//   order does not depend on registration order. Registering a name again replaces the entry,
//   except a built-in one (bwrap): replacing it takes `replace: true`, so a third-party backend
//   cannot take its place by accident. Unregistering a replacement brings the built-in back.
// - Availability answers are cached per backend and per settings content, and the whole cache is
//   dropped when the registry changes. So "cached until the registry or the backends config
//   changes" holds without the registry having to watch the configuration. The cached value is
//   the promise, so concurrent callers share one probe. A built-in backend may say which part of
//   its settings its probe reads (`RegisterOptions.probeKey`; bwrap: the program): the host's
//   warm-up probes with the defaults it knows (`{}`), the loop with Lua's (`path`, `extra_args`
//   filled in), and both then share the one probe.
// - `auto` and `required` take the first available backend; when there is none the caller runs
//   commands unsandboxed, and `required` additionally gets a warning text to show once. An
//   explicit name must be registered and available, otherwise resolution is an error the tool
//   reports ("Sandbox backend 'x' is not available: …"). Module paths (JavaScript files, Lua
//   modules) are turned into a registered name before they get here (see index.ts).
// - `wrapCommand` is the one place a backend's `wrap` is called: it awaits it, checks that the
//   answer is a list of strings, and turns any failure into "Sandbox backend 'x' failed: …".

/** The resolved policy a backend enforces (field names as in the configuration). */
export interface SandboxPolicy {
  /** Absolute, real, de-duplicated and sorted. */
  readonly rw_paths: readonly string[];
  readonly network: boolean;
  readonly allow_privileged: boolean;
  /**
   * Existing places to hide (sensitive places, session sockets): a directory shows empty, anything
   * else reads as empty. Absolute, real, outermost only, sorted.
   */
  readonly hidden_paths: readonly string[];
  /** Existing places inside `rw_paths` that stay read-only (`.git/hooks`, `.git/config`). */
  readonly read_only_paths: readonly string[];
  /** Environment variables to remove from the command's environment (names only). */
  readonly env_unset: readonly string[];
}

/** A backend's own settings: `sandbox.backends.<name>`. */
export type BackendSettings = Readonly<Record<string, unknown>>;

export type Availability = { ok: true } | { ok: false; error: string };

/** What a backend's `available` may answer: `{ok, error?}`, or just `true`/`false`. */
export type AvailabilityAnswer = Availability | boolean;

export interface SandboxBackend {
  readonly name: string;
  /** Higher is tried first by `auto`/`required` (bwrap: 100, default: 50). */
  readonly priority: number;
  readonly description?: string;
  available(settings: BackendSettings): Promise<Availability>;
  /**
   * The command line that runs `argv` inside the sandbox. Lua tools can only use a backend whose
   * answer ends with `argv` unchanged (a prefix); see index.ts.
   */
  wrap(
    argv: readonly string[],
    policy: SandboxPolicy,
    settings: BackendSettings,
  ): string[] | Promise<string[]>;
}

/** What `register` accepts: priority optional, and looser answers from `available`. */
export interface BackendDefinition {
  readonly name: string;
  readonly priority?: number;
  readonly description?: string;
  /** Needed to take the name of a built-in backend (bwrap). */
  readonly replace?: boolean;
  available(settings: BackendSettings): AvailabilityAnswer | Promise<AvailabilityAnswer>;
  wrap(
    argv: readonly string[],
    policy: SandboxPolicy,
    settings: BackendSettings,
  ): string[] | Promise<string[]>;
}

export interface RegisterOptions {
  /** The backend ships with Flemma: others replace it only with `replace: true`. */
  builtin?: boolean;
  /**
   * What of its settings the backend's `available` reads, as a cache key (default: all of them):
   * settings that differ elsewhere share one probe.
   */
  probeKey?: (settings: BackendSettings) => string;
}

export type Wrapped = { ok: true; argv: string[] } | { ok: false; error: string };

export type BackendResolution =
  | { kind: 'backend'; backend: SandboxBackend; settings: BackendSettings }
  /** `auto`/`required` found nothing: commands run unsandboxed. */
  | { kind: 'none'; reason: string; warning?: string }
  /** An explicit backend that is missing or unavailable: commands cannot run. */
  | { kind: 'error'; error: string };

export const DEFAULT_BACKEND_PRIORITY = 50;
export const BWRAP_PRIORITY = 100;

/** Backend selections that mean "the first available one". */
export function isAutoSelection(selection: string): boolean {
  return selection === 'auto' || selection === 'required';
}

/** JSON with object keys sorted, so equal settings give equal cache keys. */
function stableJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${stableJson(v)}`).join(',')}}`;
  }
  // JSON.stringify answers undefined for functions and undefined, whatever its type says.
  const text = JSON.stringify(value) as string | undefined;
  return text ?? 'null';
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** A short description of an unexpected value, for error messages. */
function shown(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value);
    case 'number':
    case 'boolean':
    case 'bigint':
      return `${typeof value} ${String(value)}`;
    case 'undefined':
      return 'undefined';
    case 'function':
      return 'a function';
    case 'symbol':
      return 'a symbol';
    default:
      return 'an object';
  }
}

/** `available`'s answer in the one form the registry works with. */
export function normalizeAvailability(answer: unknown): Availability {
  if (answer === true) return { ok: true };
  if (answer === false) return { ok: false, error: 'unavailable' };
  if (answer !== null && typeof answer === 'object' && !Array.isArray(answer)) {
    const record = answer as { ok?: unknown; error?: unknown };
    if (record.ok === true) return { ok: true };
    if (record.ok === false) {
      const error = record.error;
      return {
        ok: false,
        error:
          typeof error === 'string' && error !== ''
            ? error
            : error === undefined || error === null
              ? 'unavailable'
              : shown(error),
      };
    }
  }
  return {
    ok: false,
    error: `available() must answer true, false or {ok, error}, got ${shown(answer)}`,
  };
}

/**
 * Runs `backend.wrap` (awaiting it) and checks its answer: a non-empty list of strings. Every
 * failure reads "Sandbox backend '<name>' failed: …".
 */
export async function wrapCommand(
  backend: SandboxBackend,
  argv: readonly string[],
  policy: SandboxPolicy,
  settings: BackendSettings,
): Promise<Wrapped> {
  const failed = (why: string): Wrapped => ({
    ok: false,
    error: `Sandbox backend '${backend.name}' failed: ${why}`,
  });
  let answer: unknown;
  try {
    answer = await backend.wrap(argv, policy, settings);
  } catch (error) {
    return failed(messageOf(error));
  }
  if (
    !Array.isArray(answer) ||
    answer.length === 0 ||
    !(answer as unknown[]).every((item) => typeof item === 'string')
  ) {
    return failed(`wrap() must return a non-empty list of strings, got ${shown(answer)}`);
  }
  return { ok: true, argv: [...(answer as string[])] };
}

export class SandboxBackendRegistry {
  private readonly entries = new Map<string, SandboxBackend>();
  private readonly builtins = new Map<string, SandboxBackend>();
  private readonly cache = new Map<string, Promise<Availability>>();
  /** The backends registered with a `probeKey`. */
  private readonly probeKeys = new Map<SandboxBackend, (settings: BackendSettings) => string>();
  /** Module path → the name of the backend it registered here (`selectModuleBackend`). */
  private readonly modules = new Map<string, string>();
  private changes = 0;

  /**
   * Adds (or replaces) a backend and returns the entry as registered (compare it with `get` to
   * tell whether it is still the one in place). Throws for an invalid definition.
   */
  register(definition: BackendDefinition, options: RegisterOptions = {}): SandboxBackend {
    // Definitions come from user modules, whatever the type says.
    const raw: unknown = definition;
    if (raw === null || typeof raw !== 'object') {
      throw new Error(`A sandbox backend must be an object, got ${shown(raw)}`);
    }
    const { name, description } = definition;
    if (typeof name !== 'string' || name === '') {
      throw new Error('A sandbox backend needs a non-empty name');
    }
    if (isAutoSelection(name)) {
      throw new Error(`'${name}' is reserved and cannot name a sandbox backend`);
    }
    const priority = definition.priority ?? DEFAULT_BACKEND_PRIORITY;
    if (typeof priority !== 'number' || !Number.isFinite(priority)) {
      throw new Error(`Sandbox backend '${name}' has an invalid priority`);
    }
    for (const field of ['available', 'wrap'] as const) {
      if (typeof definition[field] !== 'function') {
        throw new Error(`Sandbox backend '${name}' needs a function \`${field}\``);
      }
    }
    if (description !== undefined && typeof description !== 'string') {
      throw new Error(`Sandbox backend '${name}': description must be a string`);
    }
    if (options.builtin !== true && this.builtins.has(name) && definition.replace !== true) {
      throw new Error(
        `Sandbox backend '${name}' is built in; a backend that replaces it must set replace = true`,
      );
    }
    const backend: SandboxBackend = {
      name,
      priority,
      ...(description === undefined ? {} : { description }),
      available: async (settings) => normalizeAvailability(await definition.available(settings)),
      wrap: (argv, policy, settings) => definition.wrap(argv, policy, settings),
    };
    if (options.builtin === true) this.builtins.set(name, backend);
    if (options.probeKey !== undefined) this.probeKeys.set(backend, options.probeKey);
    this.entries.set(name, backend);
    this.changed();
    return backend;
  }

  /**
   * Removes a backend; false when none had that name. Removing the replacement of a built-in
   * backend brings the built-in back; removing the built-in itself removes it for good.
   */
  unregister(name: string): boolean {
    const current = this.entries.get(name);
    if (current === undefined) return false;
    const builtin = this.builtins.get(name);
    if (builtin !== undefined && builtin !== current) {
      this.entries.set(name, builtin);
    } else {
      this.entries.delete(name);
      this.builtins.delete(name);
    }
    this.changed();
    return true;
  }

  /** Whether `name` is a built-in backend (registered with `builtin: true`). */
  isBuiltin(name: string): boolean {
    return this.builtins.has(name);
  }

  /** Whether the backend registered as `name` is the built-in one itself (not a replacement). */
  isBuiltinInPlace(name: string): boolean {
    const builtin = this.builtins.get(name);
    return builtin !== undefined && this.entries.get(name) === builtin;
  }

  get(name: string): SandboxBackend | undefined {
    return this.entries.get(name);
  }

  /** All backends, highest priority first (ties by name). */
  list(): SandboxBackend[] {
    return [...this.entries.values()].sort((a, b) =>
      a.priority === b.priority ? (a.name < b.name ? -1 : 1) : b.priority - a.priority,
    );
  }

  /** The backend a module at `path` registered here, if it did. */
  moduleBackend(path: string): string | undefined {
    return this.modules.get(path);
  }

  /** Notes that the module at `path` registered the backend `name`. */
  rememberModule(path: string, name: string): void {
    this.modules.set(path, name);
  }

  /** Increases with every register/unregister. */
  get generation(): number {
    return this.changes;
  }

  /** Forgets every availability answer (the next question probes again). */
  clearCache(): void {
    this.cache.clear();
  }

  /** Whether `name` can be used with `settings`; cached until the registry or settings change. */
  availability(name: string, settings: BackendSettings = {}): Promise<Availability> {
    const backend = this.entries.get(name);
    if (backend === undefined) {
      return Promise.resolve({ ok: false, error: 'no backend of that name is registered' });
    }
    const probeKey = this.probeKeys.get(backend);
    const key = `${name}\u0000${probeKey === undefined ? stableJson(settings) : probeKey(settings)}`;
    let answer = this.cache.get(key);
    if (answer === undefined) {
      answer = (async (): Promise<Availability> => {
        try {
          const result = await backend.available(settings);
          if (result.ok) return { ok: true };
          return { ok: false, error: result.error || 'unavailable' };
        } catch (error) {
          return { ok: false, error: messageOf(error) };
        }
      })();
      this.cache.set(key, answer);
    }
    return answer;
  }

  /**
   * Picks the backend for `selection` (`auto`, `required` or a name), with `backends` being the
   * `sandbox.backends` table.
   */
  async resolve(
    selection: string,
    backends: Readonly<Record<string, BackendSettings>>,
  ): Promise<BackendResolution> {
    const settingsOf = (name: string): BackendSettings => backends[name] ?? {};
    if (!isAutoSelection(selection)) {
      if (this.entries.get(selection) === undefined) {
        const known = this.list().map((b) => b.name);
        const hint = known.length === 0 ? 'none' : known.join(', ');
        return {
          kind: 'error',
          error: `Sandbox backend '${selection}' is not available: no backend of that name is registered (registered: ${hint})`,
        };
      }
      const answer = await this.availability(selection, settingsOf(selection));
      if (!answer.ok) {
        return {
          kind: 'error',
          error: `Sandbox backend '${selection}' is not available: ${answer.error}`,
        };
      }
      return {
        kind: 'backend',
        backend: this.getOrThrow(selection),
        settings: settingsOf(selection),
      };
    }
    const tried: string[] = [];
    for (const backend of this.list()) {
      const answer = await this.availability(backend.name, settingsOf(backend.name));
      if (answer.ok) return { kind: 'backend', backend, settings: settingsOf(backend.name) };
      tried.push(`${backend.name}: ${answer.error}`);
    }
    const reason =
      tried.length === 0
        ? 'No sandbox backend is registered'
        : `No sandbox backend is available (${tried.join('; ')})`;
    if (selection === 'required') {
      return {
        kind: 'none',
        reason,
        warning: `Sandbox backend is required but none is available; tools run unsandboxed. ${reason}`,
      };
    }
    return { kind: 'none', reason };
  }

  private getOrThrow(name: string): SandboxBackend {
    const backend = this.entries.get(name);
    if (backend === undefined) throw new Error(`Sandbox backend '${name}' vanished`);
    return backend;
  }

  private changed(): void {
    this.changes += 1;
    this.cache.clear();
  }
}
