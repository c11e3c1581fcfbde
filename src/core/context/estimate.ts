// A token count for a request before it is sent (the context meter's "next request" and the
// budget that decides elision, docs/context.md). No provider's tokenizer runs here: Anthropic's
// and Gemini's count over the network, OpenAI's would add megabytes to the host, and the answer
// is needed on every send. The estimate counts UTF-8 bytes: English prose and code average 3.5
// to 4.5 bytes a token with all current tokenizers, so bytes / 3.5 errs on the side of more
// tokens (a budget kept by the estimate is kept by the provider too); images and PDFs are
// counted by the providers' published per-image and per-page figures, which an estimate from
// their base64 size would overstate tenfold. The estimate is deterministic: the same request
// gives the same number, which elision relies on for identical bodies.
import type {
  EvaluatedMessage,
  EvaluatedPart,
  EvaluatedThinking,
  EvaluatedToolResult,
  EvaluatedToolUse,
  ProviderRequest,
  ToolSpec,
} from '../provider/types.js';

/** Bytes a token, the divisor of the estimate (smaller = more tokens: the cautious side). */
const BYTES_PER_TOKEN = 3.5;
/** An image as the providers count one of the sizes people attach (Claude ≈ 1,600 at 1.15 MP). */
const IMAGE_TOKENS = 1_600;
/** A PDF page as text plus its image (Claude: 1,500–3,000 a page); pages from the size. */
const PDF_PAGE_TOKENS = 2_000;
/** A PDF's bytes a page, for a page count nobody parsed (a typical text PDF: 50–100 KB a page). */
const PDF_BYTES_PER_PAGE = 75_000;
/** What each message, tool call and tool result adds beyond its text (roles, ids, framing). */
const MESSAGE_OVERHEAD = 4;
const CALL_OVERHEAD = 12;

/** The estimated tokens of `text`. */
export function estimateText(text: string): number {
  if (text === '') return 0;
  return Math.ceil(Buffer.byteLength(text, 'utf8') / BYTES_PER_TOKEN);
}

/** The estimated tokens of one part of a message (text, file, image, PDF). */
export function estimatePart(part: EvaluatedPart): number {
  switch (part.kind) {
    case 'text':
      return estimateText(part.text);
    case 'text_file':
      return estimateText(part.text) + estimateText(part.filename);
    case 'image':
      return IMAGE_TOKENS;
    case 'pdf': {
      // base64 carries 3 bytes in 4 characters.
      const bytes = (part.data.length * 3) / 4;
      return Math.max(1, Math.ceil(bytes / PDF_BYTES_PER_PAGE)) * PDF_PAGE_TOKENS;
    }
    case 'unsupported_file':
      return estimateText(part.filename);
  }
}

/** The estimated tokens of a tool result, with its framing. */
export function estimateToolResult(result: EvaluatedToolResult): number {
  return CALL_OVERHEAD + result.parts.reduce((sum, part) => sum + estimatePart(part), 0);
}

function estimateAssistantPart(part: EvaluatedPart | EvaluatedThinking | EvaluatedToolUse): number {
  switch (part.kind) {
    case 'thinking':
      // A signed thinking block is replayed with its signature; a redacted one as its data.
      return estimateText(part.content) + estimateText(part.signature?.value ?? '');
    case 'tool_use':
      return CALL_OVERHEAD + estimateText(part.name) + estimateText(JSON.stringify(part.input));
    default:
      return estimatePart(part);
  }
}

/** The estimated tokens of one message. */
export function estimateMessage(message: EvaluatedMessage): number {
  let sum = MESSAGE_OVERHEAD;
  if (message.role === 'user') {
    for (const part of message.parts) {
      sum += part.kind === 'tool_result' ? estimateToolResult(part) : estimatePart(part);
    }
  } else {
    for (const part of message.parts) sum += estimateAssistantPart(part);
  }
  return sum;
}

/** The estimated tokens of a tool's definition as offered to the model. */
export function estimateTool(tool: ToolSpec): number {
  return (
    CALL_OVERHEAD +
    estimateText(tool.name) +
    estimateText(tool.description) +
    estimateText(JSON.stringify(tool.inputSchema))
  );
}

/**
 * The estimated input tokens of a request: the system prompt, the tools' definitions and every
 * message. The reply's `max_tokens` is not included; a caller that checks a budget against the
 * window adds it when it matters.
 */
export function estimateRequest(
  request: Pick<ProviderRequest, 'system' | 'messages' | 'tools'>,
): number {
  let sum = estimateText(request.system);
  for (const tool of request.tools) sum += estimateTool(tool);
  for (const message of request.messages) sum += estimateMessage(message);
  return sum;
}
