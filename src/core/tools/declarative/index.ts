// Loading declarative tools from directories: every `.yaml`, `.yml` and `.json` file directly in
// each directory (not recursive, in name order) is one tool.
//
// Decisions:
// - One bad file never stops the others (Vega stops at the first): each problem is reported
//   with the file's path, and every good file is loaded.
// - A name used by two files: the first one (in directory order, then file-name order) wins and
//   the second is reported. A name taken by a tool of another kind (built-in, Lua, JavaScript) is
//   reported too (`isTaken`); declarative files never replace those.
// - YAML is parsed as YAML 1.2 (the `yaml` package, loaded on first use); `mode: 0644` is still
//   read as octal because its source text is what counts.
// - A configured directory that does not exist is reported; an optional one (the project's
//   `.flemma/tools`) is skipped quietly.

import { readFile, readdir } from 'node:fs/promises';
import { extname, join } from 'node:path';

import type { ToolDefinition } from '../registry.js';
import { loadYaml } from '../../util/yaml.js';
import { SchemaValidator } from '../validate.js';
import { type CompileOptions, compileDeclarative } from './compile.js';
import { DeclarativeError, type DeclarativeSpec, checkSpec } from './definition.js';

export { compileDeclarative, type CompileOptions } from './compile.js';
export { DeclarativeError, checkSpec, inputSchemaOf } from './definition.js';

export interface LoadProblem {
  /** The file (or directory) the problem is in. */
  file: string;
  message: string;
}

export interface DirectorySource {
  path: string;
  /** Skip quietly when the directory does not exist. */
  optional?: boolean;
}

export interface LoadOptions extends CompileOptions {
  /** Checks the files' structure (the host's, shared with the executor; a new one when omitted). */
  validator?: SchemaValidator;
  /** Why `name` may not be used (a tool of another kind has it), or undefined. */
  isTaken?: (name: string) => string | undefined;
}

export interface LoadResult {
  tools: ToolDefinition[];
  /** The file each loaded tool came from, by tool name. */
  files: Map<string, string>;
  problems: LoadProblem[];
}

const EXTENSIONS: ReadonlySet<string> = new Set(['.yaml', '.yml', '.json']);

/** Parses one file's text; `modeSource` is the YAML source of `implementation.mode`. */
export async function parseDefinitionText(
  text: string,
  file: string,
): Promise<{ raw: unknown; modeSource?: string }> {
  if (extname(file).toLowerCase() === '.json') {
    try {
      return { raw: JSON.parse(text) as unknown };
    } catch (error) {
      throw new DeclarativeError(
        `invalid JSON: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
  }
  const yaml = await loadYaml();
  const doc = yaml.parseDocument(text, { keepSourceTokens: true });
  const first = doc.errors[0];
  if (first !== undefined)
    throw new DeclarativeError(`invalid YAML: ${first.message.split('\n')[0] ?? ''}`);
  const node = doc.getIn(['implementation', 'mode'], true) as
    { srcToken?: { source?: unknown } } | undefined;
  const source = node?.srcToken?.source;
  return typeof source === 'string' && /^(0o|0)?[0-7]+$/u.test(source)
    ? { raw: doc.toJS(), modeSource: source }
    : { raw: doc.toJS() };
}

/** Reads, checks and compiles one file. Throws a `DeclarativeError` for any problem. */
export async function loadDefinitionFile(
  file: string,
  options: CompileOptions = {},
  validator: SchemaValidator = new SchemaValidator(),
): Promise<ToolDefinition> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new DeclarativeError(
      `cannot read: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  const parsed = await parseDefinitionText(text, file);
  const spec: DeclarativeSpec = await checkSpec(parsed.raw, validator, parsed.modeSource);
  return compileDeclarative(spec, options);
}

/** Loads every definition file of `sources`; see the decisions above. */
export async function loadDeclarativeDirs(
  sources: readonly (string | DirectorySource)[],
  options: LoadOptions = {},
): Promise<LoadResult> {
  const result: LoadResult = { tools: [], files: new Map(), problems: [] };
  const validator = options.validator ?? new SchemaValidator();
  for (const source of sources) {
    const dir = typeof source === 'string' ? { path: source } : source;
    let names: string[];
    try {
      names = (await readdir(dir.path, { withFileTypes: true }))
        .filter(
          (entry) => !entry.isDirectory() && EXTENSIONS.has(extname(entry.name).toLowerCase()),
        )
        .map((entry) => entry.name)
        .sort();
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      if (code === 'ENOENT' && dir.optional === true) continue;
      result.problems.push({
        file: dir.path,
        message:
          code === 'ENOENT'
            ? 'the tool directory does not exist'
            : `cannot list the directory: ${error instanceof Error ? error.message : String(error)}`,
      });
      continue;
    }
    for (const name of names) {
      const file = join(dir.path, name);
      try {
        const def = await loadDefinitionFile(file, options, validator);
        const earlier = result.files.get(def.name);
        if (earlier !== undefined) {
          throw new DeclarativeError(
            `the tool name '${def.name}' is already defined in ${earlier}`,
          );
        }
        const taken = options.isTaken?.(def.name);
        if (taken !== undefined) throw new DeclarativeError(taken);
        result.tools.push(def);
        result.files.set(def.name, file);
      } catch (error) {
        result.problems.push({
          file,
          message: error instanceof Error ? error.message : String(error),
        });
      }
    }
  }
  return result;
}

/** A problem as the user sees it. */
export function describeProblem(problem: LoadProblem): string {
  return `Declarative tool ${problem.file}: ${problem.message}`;
}
