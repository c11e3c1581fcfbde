// The wire of the provider unit tests: what an OpenAI-shaped server sends (a Chat Completions
// stream chunk, the 429 that asks the SDK to retry at once) and what a request must have carried.
import { expect } from 'vitest';
import type { ProviderEvent } from '../../src/core/provider/types.js';
import type { FakeRequest } from './fake-provider.js';

/** A `chat.completion.chunk` of `model` with one choice: `delta`, and its finish reason. */
export function chatChunk(
  model: string,
  delta: object,
  finishReason: string | null = null,
): object {
  return {
    id: 'chatcmpl-fake',
    object: 'chat.completion.chunk',
    created: 0,
    model,
    choices: [{ index: 0, delta, finish_reason: finishReason }],
  };
}

/** Answers `request` with OpenAI's 429 (`rate_limit_exceeded`, saying `message`), retry-after 0. */
export async function rateLimited(request: FakeRequest, message = 'Rate limited'): Promise<void> {
  await request.respondError(
    429,
    { error: { message, type: 'rate_limit_exceeded', code: null } },
    { 'retry-after': '0' },
  );
}

/** `request` went to `path` with the API key `key`, and its body is `body` to the letter. */
export function expectSent(request: FakeRequest, path: string, key: string, body: unknown): void {
  expect(request.path).toBe(path);
  expect(request.apiKey()).toBe(key);
  expect(request.rawBody).toBe(JSON.stringify(body));
}

/** The events of a stream that ended without an error (`pending`: all it yielded, and its error). */
export async function eventsOf(
  pending: Promise<{ events: ProviderEvent[]; error?: unknown }>,
): Promise<ProviderEvent[]> {
  const { events, error } = await pending;
  expect(error).toBeUndefined();
  return events;
}

/** Gemini adapter options for Vertex AI (`project` in `location`, bearer `accessToken`) at `baseURL`. */
export function vertexAt(baseURL: string, accessToken: string, project: string, location: string) {
  return { accessToken, vertex: { project, location }, baseURL };
}
