// The offline `demo` provider: no network, no key. It streams a scripted reply (thinking, text in
// small pieces, a tool call) at a readable pace, so that a newcomer sees streaming and the tool
// cycle without an account. Every reply says it comes from the demo.
//
// The script follows the request it is given, as a model would: the last user message decides
// the reply. Tool results there are reported for what they are (a value, an error, a rejected
// call); a question with arithmetic in it gets a calculator call for that arithmetic; the first
// question of a conversation gets a calculator call anyway, to show the tool cycle; any other
// question gets a plain answer.
import { sleep } from '../../util/sleep.js';
import type {
  EvaluatedMessage,
  EvaluatedToolResult,
  ProviderAdapter,
  ProviderEvent,
  ProviderRequest,
} from '../types.js';

export interface DemoOptions {
  /** Pause between pieces, in ms (tests use 0). */
  delayMs?: number;
}

const LABEL =
  '[Offline demo provider: this reply is scripted. Set $ANTHROPIC_API_KEY, $OPENAI_API_KEY or $GEMINI_API_KEY to talk to a real model.]';

/** The expression the first demo turn computes when the question has none. */
const DEFAULT_EXPRESSION = '6 * 7';

type UserMessage = Extract<EvaluatedMessage, { role: 'user' }>;

function lastUser(request: ProviderRequest): UserMessage | undefined {
  for (let i = request.messages.length - 1; i >= 0; i--) {
    const message = request.messages[i];
    if (message?.role === 'user') return message;
  }
  return undefined;
}

/** What the user wrote in a message (tool results and files aside), trimmed. */
function userText(message: UserMessage | undefined): string {
  if (message === undefined) return '';
  return message.parts
    .map((part) => (part.kind === 'text' ? part.text : ''))
    .join('')
    .trim();
}

/** One line of at most `max` characters. */
function clip(text: string, max: number): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > max ? `${line.slice(0, max - 3)}...` : line;
}

/**
 * Arithmetic in a question (`what is 12 * (3 + 4)?` → `12 * (3 + 4)`): two numbers or more joined
 * by operators; undefined when there is none.
 */
export function arithmeticIn(text: string): string | undefined {
  const number = String.raw`\(*\s*-?\d+(?:\.\d+)?\s*\)*`;
  const found = new RegExp(String.raw`${number}(?:\s*(?:[-+*/^%]|\*\*)\s*${number})+`).exec(text);
  return found === null ? undefined : found[0].trim();
}

function resultText(result: EvaluatedToolResult): string {
  return result.parts
    .map((part) => (part.kind === 'text' || part.kind === 'text_file' ? part.text : ''))
    .join('');
}

/** A sentence on one tool result, as it is. */
function describeResult(result: EvaluatedToolResult): string {
  const text = clip(resultText(result), 160);
  if (result.synthetic) {
    return `The ${result.name} call has no result: it never ran${text === '' ? '' : ` (${text})`}.`;
  }
  if (result.isError) {
    return `The ${result.name} call did not give a result${text === '' ? '' : `: "${text}"`}.`;
  }
  return text === ''
    ? `The ${result.name} tool ran and returned nothing.`
    : `The ${result.name} tool returned "${text}".`;
}

/** The scripted reply to a request (see the header comment). */
export function demoScript(request: ProviderRequest, callId: () => string): ProviderEvent[] {
  const message = lastUser(request);
  const question = userText(message);
  const results = (message?.parts ?? []).filter(
    (part): part is EvaluatedToolResult => part.kind === 'tool_result',
  );
  const calledBefore = request.messages.some(
    (m) => m.role === 'assistant' && m.parts.some((part) => part.kind === 'tool_use'),
  );
  const words = (text: string): ProviderEvent[] =>
    text.split(/(?<= )/).map((piece) => ({ type: 'text', text: piece }) as const);
  const events: ProviderEvent[] = [
    { type: 'progress', phase: 'thinking', characters: 0 },
    ...words(`${LABEL}\n\n`),
  ];
  let stopReason = 'end_turn';
  if (results.length > 0) {
    const said = results.map(describeResult);
    const ran = results.some((result) => !result.isError && !result.synthetic);
    said.push(
      ran
        ? 'That was the whole tool cycle: the model asked for a call, you approved it, and the result went back. A real model would now use it to answer you.'
        : 'A real model would now answer without it, or try another way.',
    );
    if (question !== '') said.push(`You also wrote: "${clip(question, 80)}".`);
    events.push(...words(said.join(' ')));
  } else {
    const expression = arithmeticIn(question);
    const asked = question === '' ? '' : `You asked: "${clip(question, 80)}". `;
    if (expression !== undefined || !calledBefore) {
      const intro =
        expression !== undefined
          ? 'There is arithmetic in it, so here is a call to the calculator tool:'
          : 'Replies stream into the buffer as plain text, which you can edit, save and send again. ' +
            'To show a tool call, here is one for the calculator:';
      events.push(...words(asked + intro), {
        type: 'tool_use',
        id: callId(),
        name: 'calculator',
        input: { expression: expression ?? DEFAULT_EXPRESSION },
      });
      stopReason = 'tool_use';
    } else {
      events.push(
        ...words(
          `${asked}A scripted demo cannot answer that, and no tool is needed for it. ` +
            'Ask for some arithmetic (say, "what is 12 * 34?") to see another tool call.',
        ),
      );
    }
  }
  events.push(
    {
      type: 'thinking',
      content: 'This is the demo provider: the reasoning of a real model would appear here.',
    },
    { type: 'usage', usage: { input: 0, output: 0 } },
    { type: 'done', stopReason },
  );
  return events;
}

export function createDemoAdapter(options: DemoOptions = {}): ProviderAdapter {
  const delay = options.delayMs ?? 40;
  let calls = 0;
  const callId = (): string => {
    calls += 1;
    return `demo_${Date.now().toString(36)}_${String(calls)}`;
  };
  return {
    name: 'demo',
    buildBody: (request) => ({ model: 'demo', messages: request.messages.length }),
    async *stream(request, signal) {
      for (const event of demoScript(request, callId)) {
        await sleep(delay, signal);
        if (signal.aborted) return;
        yield event;
      }
    },
  };
}
