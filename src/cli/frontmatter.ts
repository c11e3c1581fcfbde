// The frontmatter of a chat run by `flemma run`, where Neovim would evaluate it: a Lua one read
// as literals (`src/core/config/lua-literal.ts`), only in a trusted file; operations of any
// language checked against the schema (`src/core/config/schema-data.ts`). A custom language
// (registered in Lua) cannot be read here.
import type { ChatDocument } from '../core/chat/ast.js';
import {
  applyFrontmatter,
  type FrontmatterOps,
  jsonFrontmatter,
  yamlFrontmatter,
} from '../core/config/frontmatter.js';
import { luaLiteralFrontmatter } from '../core/config/lua-literal.js';
import { checkOps } from '../core/config/schema-data.js';
import { loadYaml } from '../core/util/yaml.js';
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

/** Every tool name is taken here: only the trust of the operations is judged. */
const ANY_TOOL = { enabled: [], has: () => true, suggest: () => undefined };

/**
 * What a file that is not trusted does not get of its frontmatter, each as a line for stderr:
 * the options of a JSON or YAML one that need trust (with their lines), or the whole Lua one.
 * Its errors are left to the run, which reports them.
 */
export async function untrustedNotes(
  document: ChatDocument,
  config: Record<string, unknown>,
  file: string,
): Promise<string[]> {
  const frontmatter = document.frontmatter;
  if (frontmatter === undefined) return [];
  const language = frontmatter.language.toLowerCase();
  const line = frontmatter.span.startLine + 1;
  if (language === 'lua') {
    return [
      `${file}: the Lua frontmatter is not run: the file is not trusted (--trust, or :trust in Neovim)`,
    ];
  }
  let parsed: FrontmatterOps | { error: string };
  if (language === 'json') parsed = jsonFrontmatter(frontmatter.code, line);
  else if (language === 'yaml' || language === 'yml') {
    parsed = yamlFrontmatter(frontmatter.code, line, await loadYaml());
  } else return [];
  if ('error' in parsed) return [];
  const checked = checkOps(parsed.ops);
  if ('error' in checked) return [];
  const { refused } = applyFrontmatter(config, checked.ops, ANY_TOOL, { trusted: false });
  return refused.map(
    (op) =>
      `${file}:${String(op.line)}: ${op.key} is not applied: the file is not trusted (--trust, or :trust in Neovim)`,
  );
}
