// The `builtin` implementation of a declarative tool: an alias of a registered tool (the
// decisions are in compile.ts).
import {
  DeclarativeError,
  type DeclarativeSpec,
  type TemplateScope,
  compileTree,
  renderTree,
} from './definition.js';
import type { RenderOptions } from './template.js';
import type { CompileOptions, Compiled, Values } from './compiled.js';

export function compileBuiltin(
  spec: DeclarativeSpec,
  impl: Record<string, unknown>,
  scope: TemplateScope,
  render: RenderOptions,
  options: CompileOptions,
): Compiled {
  const target = String(impl['function']);
  if (target === spec.name) {
    throw new DeclarativeError(`implementation.function: '${target}' cannot be an alias of itself`);
  }
  const lookup = options.lookup ?? (() => undefined);
  const known = lookup(target);
  if (known === undefined) {
    const guess = options.suggest?.(target);
    throw new DeclarativeError(
      `implementation.function: no registered tool '${target}'${guess === undefined ? '' : ` (did you mean '${guess}'?)`}`,
    );
  }
  const args = compileTree('implementation.args', impl['args'] ?? {}, scope);
  const inputOf = (values: Values, opts: RenderOptions): Record<string, unknown> => {
    const def = lookup(target);
    const properties = (def?.inputSchema['properties'] ?? {}) as Record<string, unknown>;
    const input: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(values)) {
      if (Object.hasOwn(properties, key)) input[key] = value;
    }
    return { ...input, ...(renderTree(args, values, opts) as Record<string, unknown>) };
  };
  return {
    async: known.async === true,
    preview: (values) => {
      const def = lookup(target);
      const input = inputOf(values, { ...render, keepEnv: true });
      const shown = def?.formatPreview?.(input, 200);
      return shown ?? `${target} ${JSON.stringify(input)}`;
    },
    execute: async (values, ctx) => {
      const def = lookup(target);
      if (def?.execute === undefined) {
        return { ok: false, error: `${spec.name}: the tool '${target}' it calls is not available` };
      }
      return def.execute(inputOf(values, render), ctx);
    },
  };
}
