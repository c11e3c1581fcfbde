// An MCP resource (`@mcp:<server>:<uri>`) as the parts a provider takes, by the rules of a file
// reference (references.ts): text inline (at most 1 MiB), PNG/JPEG/GIF/WebP images and PDFs
// attached (at most 20 MiB). Unlike a file, a resource of another binary type is an error: the
// server said what it is, and sending a note in its place would hide that the reference failed.
import type { EvaluatedPart } from '../provider/types.js';
import { isTextMime, mimeFromExtension } from '../tools/definitions/read.js';
import type { McpResourceContents } from '../tools/mcp/types.js';
import { IMAGE_TYPES, MAX_BINARY_BYTES, MAX_TEXT_BYTES } from './references.js';

/** The name a provider shows for the resource: the last part of the URI's path, or the URI. */
export function resourceFilename(uri: string): string {
  const path = uri.replace(/[?#].*$/s, '').replace(/\/+$/, '');
  const last = path.slice(path.lastIndexOf('/') + 1);
  return last === '' || last.endsWith(':') ? uri : last;
}

/** The decoded size of base64 data. */
function base64Bytes(data: string): number {
  const trimmed = data.replace(/\s+/g, '');
  const padding = trimmed.endsWith('==') ? 2 : trimmed.endsWith('=') ? 1 : 0;
  return Math.max(0, Math.floor((trimmed.length * 3) / 4) - padding);
}

/**
 * The parts of a `resources/read` answer. `mime` (a `;type=` of the reference) overrides the
 * type the server gives; without either, the URI's extension decides, then text for `text`
 * contents. Throws an Error saying what is wrong (the caller names the reference and its line).
 */
export function resourceParts(
  server: string,
  uri: string,
  contents: readonly McpResourceContents[],
  mime?: string,
): EvaluatedPart[] {
  if (contents.length === 0) {
    throw new Error(`MCP server '${server}' answered no content for ${uri}`);
  }
  return contents.map((item) => {
    const itemUri = item.uri === '' ? uri : item.uri;
    const type = mime ?? item.mimeType ?? mimeFromExtension(resourceFilename(itemUri));
    const filename = resourceFilename(itemUri);
    if (typeof item.text === 'string') {
      const size = Buffer.byteLength(item.text, 'utf8');
      if (size > MAX_TEXT_BYTES) {
        throw new Error(
          `${itemUri} of MCP server '${server}' is too large to inline (${String(size)} bytes; at most 1 MiB)`,
        );
      }
      return { kind: 'text_file', mimeType: type ?? 'text/plain', text: item.text, filename };
    }
    if (typeof item.blob !== 'string') {
      throw new Error(`MCP server '${server}' answered neither text nor data for ${itemUri}`);
    }
    const actual = type ?? 'application/octet-stream';
    const size = base64Bytes(item.blob);
    if (isTextMime(actual)) {
      if (size > MAX_TEXT_BYTES) {
        throw new Error(
          `${itemUri} of MCP server '${server}' is too large to inline (${String(size)} bytes; at most 1 MiB)`,
        );
      }
      const text = Buffer.from(item.blob, 'base64').toString('utf8');
      return { kind: 'text_file', mimeType: actual, text, filename };
    }
    if (IMAGE_TYPES.has(actual) || actual === 'application/pdf') {
      if (size > MAX_BINARY_BYTES) {
        throw new Error(
          `${itemUri} of MCP server '${server}' is too large to attach (${String(size)} bytes; at most 20 MiB)`,
        );
      }
      const data = item.blob.replace(/\s+/g, '');
      return actual === 'application/pdf'
        ? { kind: 'pdf', mimeType: 'application/pdf', data, filename }
        : { kind: 'image', mimeType: actual, data, filename };
    }
    throw new Error(
      `${itemUri} of MCP server '${server}' is ${actual}, which cannot be sent (text, PNG, JPEG, GIF, WebP or PDF only)`,
    );
  });
}
