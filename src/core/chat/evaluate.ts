// Prompt → the evaluated prompt providers take. Until templates and file references are
// evaluated (in Neovim, issue 7), they are sent as the literal text the user wrote, with a
// warning, so that nothing the user wrote is silently dropped.
import type { EvaluatedMessage, EvaluatedPart } from '../provider/types.js';
import type { ContentPart, Prompt } from './prompt.js';

export interface EvaluatedPrompt {
  system: string;
  messages: EvaluatedMessage[];
  warnings: string[];
}

function literal(part: ContentPart, warnings: Set<string>): string {
  switch (part.kind) {
    case 'text':
      return part.text;
    case 'expression':
      warnings.add('templates ({{ }}, {% %}) are not evaluated yet: they are sent as written');
      return `{{${part.trimBefore ? '-' : ''} ${part.code} ${part.trimAfter ? '-' : ''}}}`;
    case 'code':
      warnings.add('templates ({{ }}, {% %}) are not evaluated yet: they are sent as written');
      return `{%${part.trimBefore ? '-' : ''} ${part.code} ${part.trimAfter ? '-' : ''}%}`;
    case 'file_reference':
      warnings.add('file references (@./file) are not read yet: they are sent as written');
      return `@${part.raw}`;
    default:
      return '';
  }
}

/** Join consecutive content parts into text parts. */
function textParts(parts: ContentPart[], warnings: Set<string>): EvaluatedPart[] {
  const text = parts.map((part) => literal(part, warnings)).join('');
  return text === '' ? [] : [{ kind: 'text', text }];
}

export function evaluateLiterally(prompt: Prompt): EvaluatedPrompt {
  const warnings = new Set<string>();
  const system = textParts(prompt.system, warnings)
    .map((part) => (part.kind === 'text' ? part.text : ''))
    .join('')
    .trim();
  const messages: EvaluatedMessage[] = prompt.messages.map((message) => {
    if (message.role === 'assistant') {
      return {
        role: 'assistant',
        parts: message.parts.map((part) =>
          part.kind === 'text' ? { kind: 'text' as const, text: part.text } : part,
        ),
      };
    }
    const parts: Extract<EvaluatedMessage, { role: 'user' }>['parts'] = [];
    let pending: ContentPart[] = [];
    const flush = (): void => {
      parts.push(...textParts(pending, warnings));
      pending = [];
    };
    for (const part of message.parts) {
      if (part.kind === 'tool_result') {
        flush();
        parts.push({
          kind: 'tool_result',
          toolUseId: part.toolUseId,
          name: part.name,
          parts: textParts(part.parts, warnings),
          isError: part.isError,
          synthetic: part.synthetic,
        });
      } else {
        pending.push(part);
      }
    }
    flush();
    return { role: 'user', parts };
  });
  return { system, messages, warnings: [...warnings] };
}
