// Templates the host can fill without Lua: a prompt whose only tags are `{{ name }}`, each naming
// a variable whose value is a string, renders to what Lua would render (a string variable is
// found before any global, and `tostring` leaves a string as it is). Anything else (a `{% %}`
// tag, an expression, a name the variables do not hold as a string) is left to Lua, for the
// whole prompt: Lua renders it in one environment, so either every job is spliced here or none.
// The caller decides whether templates may run at all (a trusted chat); this only fills them.
import type { TemplateSegment } from './render.js';

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Lua's reserved words: never a variable's name (`{{ nil }}` is an expression). */
const LUA_KEYWORD =
  /^(?:and|break|do|else|elseif|end|false|for|function|goto|if|in|local|nil|not|or|repeat|return|then|true|until|while)$/;

/** The string value `code` names, when it is a bare variable name holding one. */
function variableText(code: string, variables: Record<string, unknown>): string | undefined {
  const name = code.trim();
  if (!NAME.test(name) || LUA_KEYWORD.test(name) || !Object.hasOwn(variables, name)) {
    return undefined;
  }
  const value = variables[name];
  return typeof value === 'string' ? value : undefined;
}

/**
 * The texts of `jobs` when every tag in them names a string variable of `variables`; undefined
 * when any tag needs Lua.
 */
export function spliceVariables(
  jobs: readonly (readonly TemplateSegment[])[],
  variables: Record<string, unknown>,
): string[] | undefined {
  const texts: string[] = [];
  for (const segments of jobs) {
    let text = '';
    for (const segment of segments) {
      if (segment.kind === 'text') {
        text += segment.text;
        continue;
      }
      if (segment.kind === 'code') return undefined;
      const value = variableText(segment.code, variables);
      if (value === undefined) return undefined;
      text += value;
    }
    texts.push(text);
  }
  return texts;
}
