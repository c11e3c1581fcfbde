// Sandbox backends that come from JavaScript files: a `sandbox.backend` setting that names a
// `.js`/`.mjs`/`.cjs` file, and the `sandboxBackends` list a JavaScript tool module may export.
//
// Decisions:
// - A backend module exports `backend`, or a default export that is the backend (or holds one
//   under `backend`, which is what a CommonJS `module.exports = { backend }` looks like).
// - `~` and `~/…` are expanded; a relative path is taken against the editor's cwd, never against
//   the host's.
// - A module is imported once per path (Node's module cache keeps it); a failed import is
//   tried again next time, so fixing the file and trying again works (as far as Node's own
//   module cache lets it).
// - A module's backend is registered the first time a registry is asked for that path, and again
//   only when its name has since disappeared from that registry. Registering on every call would
//   drop the availability cache every time.

import { isAbsolute, resolve as resolvePath } from 'node:path';
import { pathToFileURL } from 'node:url';
import { expandHome } from '../../util/expand-path.js';

import type { BackendDefinition, SandboxBackendRegistry } from './backends.js';

const JS_MODULE = /\.(?:m?js|cjs)$/;

/** Whether a `sandbox.backend` value names a JavaScript file. */
export function isJsModulePath(selection: string): boolean {
  return JS_MODULE.test(selection);
}

/** The absolute path of a module named in the configuration. */
export function expandModulePath(spec: string, home: string, cwd: string): string {
  const path = expandHome(spec, home);
  return isAbsolute(path) ? resolvePath(path) : resolvePath(cwd, path);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** The backend a module exports (`backend`, or the default export), or undefined. */
export function backendFromExports(
  exports: Record<string, unknown>,
): BackendDefinition | undefined {
  const fallback = exports['default'];
  const candidates = [
    exports['backend'],
    isObject(fallback) ? fallback['backend'] : undefined,
    fallback,
  ];
  const found = candidates.find(
    (candidate) => isObject(candidate) && typeof candidate['name'] === 'string',
  );
  return found as BackendDefinition | undefined;
}

/** The `sandboxBackends` list a JavaScript tool module exports (empty when it has none). */
export function backendsFromToolModule(exports: Record<string, unknown>): unknown[] {
  const fallback = exports['default'];
  const list =
    exports['sandboxBackends'] ?? (isObject(fallback) ? fallback['sandboxBackends'] : undefined);
  return Array.isArray(list) ? (list as unknown[]) : [];
}

/** Imports a backend module and returns the backend it exports. */
export async function importBackendModule(path: string): Promise<BackendDefinition> {
  const exports = (await import(pathToFileURL(path).href)) as Record<string, unknown>;
  const backend = backendFromExports(exports);
  if (backend === undefined) {
    throw new Error('it exports no `backend` (nor a default export) with a `name`');
  }
  return backend;
}

export type ModuleSelection = { name: string } | { error: string };

/**
 * Loads the backend module at `path` (absolute) into `registry` if needed and answers the name
 * to select, or an error that says what went wrong.
 */
export async function selectModuleBackend(
  path: string,
  registry: SandboxBackendRegistry,
): Promise<ModuleSelection> {
  const known = registry.moduleBackend(path);
  if (known !== undefined && registry.get(known) !== undefined) return { name: known };
  try {
    const backend = await importBackendModule(path);
    registry.register(backend);
    registry.rememberModule(path, backend.name);
    return { name: backend.name };
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    return { error: `Sandbox backend module '${path}' could not be loaded: ${message}` };
  }
}
