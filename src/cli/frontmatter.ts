// The frontmatter of a chat run by `flemma run`, where Neovim would evaluate it: a Lua one read
// as literals (`src/core/config/lua-literal.ts`), only in a trusted file; operations of any
// language checked against the schema (`src/core/config/schema-data.ts`). A custom language
// (registered in Lua) cannot be read here.
import { luaLiteralFrontmatter } from '../core/config/lua-literal.js';
import { checkOps } from '../core/config/schema-data.js';
import type { FrontmatterAnswer, FrontmatterEvaluator } from '../files/api.js';

/** What the evaluator found wrong in the chat (the run then ends with exit code 2). */
export interface FrontmatterFindings {
  error?: string;
}

export function cliFrontmatter(findings: FrontmatterFindings): FrontmatterEvaluator {
  const failed = (error: string): FrontmatterAnswer => {
    findings.error = error;
    return { error };
  };
  return (_chat, request, trust) => {
    if ('ops' in request) {
      const checked = checkOps(request.ops);
      return Promise.resolve('error' in checked ? failed(checked.error) : checked);
    }
    const fence = `frontmatter line ${String(request.line - 1)}`;
    if (request.custom !== undefined) {
      return Promise.resolve(
        failed(
          `${fence}: a ${request.custom} frontmatter is read by Lua, which runs only in Neovim`,
        ),
      );
    }
    if (!trust.trusted) {
      return Promise.resolve({
        untrusted: `${fence}: the Lua frontmatter was not applied: the file is not trusted (run with --trust, or :trust it in Neovim)`,
      });
    }
    const parsed = luaLiteralFrontmatter(request.code, request.line);
    if ('error' in parsed) return Promise.resolve(failed(parsed.error));
    const checked = checkOps(parsed.ops);
    if ('error' in checked) return Promise.resolve(failed(checked.error));
    return Promise.resolve({ ops: checked.ops, variables: parsed.variables });
  };
}
