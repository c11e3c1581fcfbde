// The `file_read` and `file_write` implementations of a declarative tool (the decisions are in
// compile.ts).
import { stat } from 'node:fs/promises';
import { dirname } from 'node:path';

import { FileReadError, TOOL_READ_LIMIT_BYTES, readBounded } from '../../util/bounded-read.js';
import { SandboxViolation } from '../sandbox/roots.js';
import { formatSize } from '../truncate.js';
import { DeclarativeError, type TemplateScope, parseMode, templateAt } from './definition.js';
import type { RenderOptions, Template } from './template.js';
import { type Compiled, messageOf } from './compiled.js';

function pathTemplate(impl: Record<string, unknown>, scope: TemplateScope): Template {
  const raw = impl['path'];
  if (raw === undefined && !scope.params.includes('path')) {
    throw new DeclarativeError(
      "implementation.path is missing (or declare a parameter named 'path')",
    );
  }
  return templateAt('implementation.path', typeof raw === 'string' ? raw : '{{path}}', scope);
}

export function compileFileRead(
  impl: Record<string, unknown>,
  scope: TemplateScope,
  render: RenderOptions,
): Compiled {
  const path = pathTemplate(impl, scope);
  const base64 = impl['encoding'] === 'base64';
  return {
    async: false,
    preview: (values) =>
      `read ${path.render(values, { ...render, keepEnv: true })}${base64 ? ' (base64)' : ''}`,
    execute: async (values, ctx) => {
      const shown = path.render(values, render);
      const abs = await ctx.sandbox.resolve(shown);
      let data: Buffer;
      try {
        // Bounded (a model may name `/dev/zero`): the output limit is applied to the text anyway.
        data = (await readBounded(abs, { name: shown, maxBytes: TOOL_READ_LIMIT_BYTES })).data;
      } catch (error) {
        if (error instanceof FileReadError) return { ok: false, error: error.message };
        return { ok: false, error: `Cannot read ${shown}: ${fsReason(error)}` };
      }
      return {
        ok: true,
        output: base64 ? data.toString('base64') : data.toString('utf8').replace(/\r?\n$/, ''),
      };
    },
  };
}

export function compileFileWrite(
  impl: Record<string, unknown>,
  scope: TemplateScope,
  render: RenderOptions,
  modeSource: string | undefined,
): Compiled {
  const path = pathTemplate(impl, scope);
  const rawContent = impl['content'];
  if (rawContent === undefined && !scope.params.includes('content')) {
    throw new DeclarativeError(
      "implementation.content is missing (or declare a parameter named 'content')",
    );
  }
  const content = templateAt(
    'implementation.content',
    typeof rawContent === 'string' ? rawContent : '{{content}}',
    scope,
  );
  const mode = impl['mode'] === undefined ? undefined : parseMode(impl['mode'], modeSource);
  const makeDirs = impl['mkdir'] === true;
  return {
    async: false,
    fileChange: (values) => ({
      path: path.render(values, render),
      content: content.render(values, render),
    }),
    preview: (values) => {
      const text = content.render(values, { ...render, keepEnv: true });
      return `write ${path.render(values, { ...render, keepEnv: true })} (${formatSize(Buffer.byteLength(text, 'utf8'))})`;
    },
    execute: async (values, ctx) => {
      const shown = path.render(values, render);
      const text = content.render(values, render);
      const abs = await ctx.sandbox.resolve(shown, { write: true });
      if (!makeDirs && !(await isDirectory(dirname(abs)))) {
        return {
          ok: false,
          error: `Cannot write ${shown}: its directory does not exist (the tool does not create directories; set mkdir: true to allow it)`,
        };
      }
      try {
        // Race-free against a link swapped after the check (see write.ts).
        const { handle } = await ctx.sandbox.open_for_write(abs, {
          mkdir: makeDirs,
          ...(mode === undefined ? {} : { mode }),
        });
        try {
          await handle.writeFile(text, 'utf8');
          if (mode !== undefined) await handle.chmod(mode);
        } finally {
          await handle.close();
        }
      } catch (error) {
        if (error instanceof SandboxViolation) throw error;
        return { ok: false, error: `Cannot write ${shown}: ${fsReason(error)}` };
      }
      return {
        ok: true,
        output: `Wrote ${String(Buffer.byteLength(text, 'utf8'))} bytes to ${shown}`,
      };
    },
  };
}

async function isDirectory(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isDirectory();
  } catch {
    return false;
  }
}

function fsReason(error: unknown): string {
  const code = (error as { code?: unknown }).code;
  if (code === 'ENOENT') return 'no such file or directory';
  if (code === 'EISDIR') return 'it is a directory';
  if (code === 'EACCES' || code === 'EPERM') return 'permission denied';
  return messageOf(error);
}
