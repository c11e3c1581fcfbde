// The offline `demo` provider: no network, no key. It streams a scripted reply (thinking, text in
// small pieces, a tool call) at a readable pace, so that a newcomer sees streaming and the tool
// cycle without an account. Every reply says it comes from the demo.
import { sleep } from '../../util/sleep.js';
import type { ProviderAdapter, ProviderEvent, ProviderRequest } from '../types.js';

export interface DemoOptions {
  /** Pause between pieces, in ms (tests use 0). */
  delayMs?: number;
}

const LABEL =
  '[Offline demo provider: this reply is scripted. Set $ANTHROPIC_API_KEY, $OPENAI_API_KEY or $GEMINI_API_KEY to talk to a real model.]';

function lastUserText(request: ProviderRequest): string {
  for (let i = request.messages.length - 1; i >= 0; i--) {
    const message = request.messages[i];
    if (message?.role !== 'user') continue;
    for (const part of message.parts)
      if (part.kind === 'text' && part.text.trim() !== '') return part.text.trim();
  }
  return '';
}

/** The scripted reply to a request: first turn asks for a tool, later turns answer. */
export function demoScript(request: ProviderRequest): ProviderEvent[] {
  const question = lastUserText(request);
  const afterTool = request.messages.some(
    (message) =>
      message.role === 'user' && message.parts.some((part) => part.kind === 'tool_result'),
  );
  const words = (text: string): ProviderEvent[] =>
    text.split(/(?<= )/).map((piece) => ({ type: 'text', text: piece }) as const);
  const events: ProviderEvent[] = [
    { type: 'progress', phase: 'thinking', characters: 0 },
    ...words(`${LABEL}\n\n`),
  ];
  if (afterTool) {
    events.push(
      ...words(
        'The tool result is in your message above: that is the whole cycle. A real model would now use it to answer you.',
      ),
    );
  } else {
    events.push(
      ...words(
        `You asked: "${question.length > 80 ? question.slice(0, 77) + '...' : question}". ` +
          'Replies stream into the buffer as plain text, which you can edit, save and send again. ' +
          'To show a tool call, here is one for the calculator:',
      ),
      {
        type: 'tool_use',
        id: `demo_${Date.now().toString(36)}`,
        name: 'calculator',
        input: { expression: '6 * 7' },
      },
    );
  }
  events.push(
    {
      type: 'thinking',
      content: 'This is the demo provider: the reasoning of a real model would appear here.',
    },
    { type: 'usage', usage: { input: 0, output: 0 } },
    { type: 'done', stopReason: afterTool ? 'end_turn' : 'tool_use' },
  );
  return events;
}

export function createDemoAdapter(options: DemoOptions = {}): ProviderAdapter {
  const delay = options.delayMs ?? 40;
  return {
    name: 'demo',
    buildBody: (request) => ({ model: 'demo', messages: request.messages.length }),
    async *stream(request, signal) {
      for (const event of demoScript(request)) {
        await sleep(delay, signal);
        if (signal.aborted) return;
        yield event;
      }
    },
  };
}
