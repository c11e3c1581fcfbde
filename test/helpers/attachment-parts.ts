// The file parts of an evaluated prompt (src/core/provider/types.ts) on one line each: what an
// @./file reference turns into before a provider adapter writes it in its own form.
import type { EvaluatedPart } from '../../src/core/provider/types.js';

/** A text file `filename` holding `text` (`text/plain` unless `mimeType` says otherwise). */
export function textFilePart(
  filename: string,
  text: string,
  mimeType = 'text/plain',
): EvaluatedPart {
  return { kind: 'text_file', mimeType, text, filename };
}

/** An image `filename`, `data` in base64 (`image/png` unless `mimeType` says otherwise). */
export function imagePart(filename: string, data: string, mimeType = 'image/png'): EvaluatedPart {
  return { kind: 'image', mimeType, data, filename };
}

/** A PDF `filename`, `data` in base64. */
export function pdfPart(filename: string, data: string): EvaluatedPart {
  return { kind: 'pdf', mimeType: 'application/pdf', data, filename };
}

/** A file `filename` no provider can be sent. */
export function unsupportedPart(filename: string): EvaluatedPart {
  return { kind: 'unsupported_file', filename };
}
