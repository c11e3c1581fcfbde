// The Gemini stream's response chunks, read into provider events (the rest of the adapter is
// gemini.ts).
import { randomBytes } from 'node:crypto';
import type { GenerateContentResponse } from '@google/genai';
import { ProviderError, internalToolName, type ProviderEvent, type Usage } from '../types.js';

/** Turns response chunks into provider events; throws ProviderError for a blocked reply. */
export class ChunkReader {
  /** Whether any chunk arrived (a lost connection is then no longer safe to retry). */
  started = false;
  finished = false;
  private thoughts = '';
  private sawThoughts = false;
  private signature = '';
  private toolUses = 0;
  private usage: Usage | undefined;

  constructor(private readonly provider: string) {}

  read(chunk: GenerateContentResponse): ProviderEvent[] {
    this.started = true;
    const out: ProviderEvent[] = [];
    const candidate = chunk.candidates?.[0];
    for (const part of candidate?.content?.parts ?? []) {
      // An empty signature never replaces one already seen.
      if (typeof part.thoughtSignature === 'string' && part.thoughtSignature !== '') {
        this.signature = part.thoughtSignature;
      }
      if (part.functionCall !== undefined) {
        out.push(
          this.toolUse(part.functionCall.name ?? '', part.functionCall.id, part.functionCall.args),
        );
      } else if (typeof part.text === 'string') {
        if (part.thought === true) {
          this.sawThoughts = true;
          this.thoughts += part.text;
          out.push({ type: 'progress', phase: 'thinking', characters: this.thoughts.length });
        } else if (/\S/.test(part.text)) {
          out.push({ type: 'text', text: part.text });
        }
      }
    }
    if (chunk.usageMetadata !== undefined) this.usage = readUsage(chunk.usageMetadata);

    const blocked = chunk.promptFeedback?.blockReason;
    if (candidate === undefined && blocked !== undefined) {
      throw new ProviderError(
        this.provider,
        'blocked',
        `Prompt blocked by ${this.label()} (${blocked})`,
      );
    }
    const reason = candidate?.finishReason;
    if (reason !== undefined) out.push(...this.finish(reason));
    return out;
  }

  private toolUse(wire: string, id: string | undefined, args: unknown): ProviderEvent {
    this.toolUses += 1;
    return {
      type: 'tool_use',
      id: id !== undefined && id !== '' ? id : syntheticId(wire),
      name: internalToolName(wire),
      input: args ?? {},
    };
  }

  private finish(reason: string): ProviderEvent[] {
    this.finished = true;
    const out: ProviderEvent[] = [];
    if (this.sawThoughts || this.signature !== '') {
      out.push(
        this.signature === ''
          ? { type: 'thinking', content: this.thoughts }
          : {
              type: 'thinking',
              content: this.thoughts,
              signature: { provider: this.provider, value: this.signature },
            },
      );
    }
    if (this.usage !== undefined) out.push({ type: 'usage', usage: this.usage });
    if (reason === 'STOP') {
      out.push({ type: 'done', stopReason: this.toolUses > 0 ? 'tool_use' : 'end_turn' });
      return out;
    }
    if (reason === 'MAX_TOKENS') {
      out.push({
        type: 'warning',
        message: `${this.label()} response was truncated (maximum output tokens reached)`,
      });
      out.push({ type: 'done', stopReason: 'max_tokens' });
      return out;
    }
    throw new ProviderError(
      this.provider,
      'blocked',
      `Response blocked by ${this.label()} (${reason})`,
    );
  }

  private label(): string {
    return this.provider === 'vertex' ? 'Vertex AI' : 'Gemini';
  }
}

/** Gemini calls usually carry no id: `urn:flemma:tool:<wire name>:<hex time><4 hex random>`. */
function syntheticId(wire: string): string {
  const time = Math.floor(Date.now() / 1000).toString(16);
  return `urn:flemma:tool:${wire}:${time}${randomBytes(2).toString('hex')}`;
}

function readUsage(raw: NonNullable<GenerateContentResponse['usageMetadata']>): Usage {
  const cached = raw.cachedContentTokenCount ?? 0;
  const usage: Usage = {
    input: (raw.promptTokenCount ?? 0) - cached,
    output: raw.candidatesTokenCount ?? 0,
  };
  if (raw.thoughtsTokenCount !== undefined && raw.thoughtsTokenCount > 0) {
    usage.thoughts = raw.thoughtsTokenCount;
  }
  if (cached > 0) usage.cacheRead = cached;
  return usage;
}
