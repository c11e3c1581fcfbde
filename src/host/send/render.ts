// A request's prompt rendered for the send: templates in Neovim (one call for the whole prompt;
// none when every tag names a string variable, src/core/chat/splice.ts) and file references read
// within what the buffer's trust allows, MCP resources through their server.
import { homedir } from 'node:os';
import type { Prompt } from '../../core/chat/prompt.js';
import { mcpReferenceRefusal, readReference } from '../../core/chat/references.js';
import { resourceParts } from '../../core/chat/resource-parts.js';
import { spliceVariables } from '../../core/chat/splice.js';
import { type RenderedPrompt, renderPrompt } from '../../core/chat/render.js';
import type { ToolSpec } from '../../core/provider/types.js';
import { trace } from '../../editor/trace.js';
import type { HostBase } from '../base.js';
import type { BufferSettings } from '../buffer-settings.js';
import type { ToolCatalogue } from '../tools/catalogue.js';
import { referenceScope } from '../trust-check.js';

/** What rendering asks of the tool catalogue. */
export type RenderCatalogue = Pick<
  ToolCatalogue,
  'personalityTools' | 'readsResultReferences' | 'mcp'
>;

/**
 * Templates rendered in Neovim (one call for the whole prompt, with the frontmatter's
 * variables) and file references read relative to the chat's directory.
 */
export function renderForRequest(
  ctx: Pick<HostBase, 'lua' | 'references'>,
  catalogue: RenderCatalogue,
  what: { bufnr: number; prompt: Prompt; editor: BufferSettings; tools: readonly ToolSpec[] },
): Promise<RenderedPrompt> {
  const { bufnr, prompt, editor, tools } = what;
  // A file that is not trusted reads only inside its own directory tree.
  const { baseDir, scope } = referenceScope(editor);
  return renderPrompt(prompt, {
    renderTemplates: async (jobs) => {
      // Tags that only name string variables of a trusted chat are filled here: no call to Lua.
      const filled = editor.trust.trusted ? spliceVariables(jobs, editor.variables) : undefined;
      if (filled !== undefined) {
        trace('send:host-rendered');
        return { texts: filled };
      }
      // A job with no `{% %}` needs only its expressions evaluated: their text stays here and
      // the values are spliced in (a long chat's messages do not travel to Lua and back).
      const spliced = jobs.map((segments) => segments.every((segment) => segment.kind !== 'code'));
      trace('send:lua-render');
      const answer = await ctx.lua.call('template.render', {
        bufnr,
        digest: editor.digest,
        variables: editor.variables,
        jobs: jobs.map((segments, index) =>
          spliced[index] === true
            ? { spliced: true, segments: segments.filter((segment) => segment.kind !== 'text') }
            : { segments },
        ),
        // For personalities (`include("urn:flemma:personality:…")`).
        tools: catalogue.personalityTools(tools),
      });
      trace('send:lua-rendered');
      if (answer.untrusted !== undefined) return { error: answer.untrusted };
      if (answer.error !== undefined) return { error: `Template error: ${answer.error}` };
      const results = answer.texts ?? [];
      return {
        texts: jobs.map((segments, index) => {
          const result = results[index];
          if (!Array.isArray(result)) return result ?? '';
          let next = 0;
          return segments
            .map((segment) => (segment.kind === 'text' ? segment.text : (result[next++] ?? '')))
            .join('');
        }),
      };
    },
    readReference: async (reference) => {
      if (reference.server === undefined) {
        return await readReference(reference, baseDir, homedir(), scope, ctx.references);
      }
      // `@mcp:<server>:<uri>`: read through the server, bounded by its timeout.
      const { server, path: uri } = reference;
      const refusal = mcpReferenceRefusal(server, scope);
      if (refusal !== undefined) throw new Error(refusal);
      const contents = await catalogue.mcp.readResource(server, uri, new AbortController().signal);
      return resourceParts(server, uri, contents, reference.mime);
    },
    readsResultReferences: (name) => catalogue.readsResultReferences(name),
  });
}
