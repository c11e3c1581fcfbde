// Log lines and what the redactor makes of them (no known values): the host's redactor must give
// exactly this (test/unit/redact.test.ts) and so must the shim's (test/nvim/redact.test.ts).
const R = '[REDACTED]';

export const REDACTION_CORPUS: readonly { text: string; redacted: string }[] = [
  { text: 'key sk-ant-api03-AbCdEfGhIjKlMnOp_qr-st', redacted: `key ${R}` },
  { text: 'openai sk-proj-abcdefghijklmnopqrstuvwx.', redacted: `openai ${R}.` },
  { text: 'gemini AIzaSyA1234567890abcdefghijklmnopqrstu', redacted: `gemini ${R}` },
  { text: 'google ya29.a0AfH6SMBx-abcdefghijklmnop rest', redacted: `google ${R} rest` },
  {
    text: 'jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.SflKxwRJSMeKKF2QT4fwpMeJf36P',
    redacted: `jwt ${R}`,
  },
  { text: 'gh ghp_0123456789abcdefghijABCDEFGHIJ', redacted: `gh ${R}` },
  { text: 'slack xoxb-1234567890-abcdef', redacted: `slack ${R}` },
  { text: 'aws AKIAIOSFODNN7EXAMPLE', redacted: `aws ${R}` },
  {
    text: 'curl -H "Authorization: Bearer abc.def-ghi_jkl"',
    redacted: `curl -H "Authorization: Bearer ${R}"`,
  },
  { text: 'sent Bearer 0123456789abcdef to it', redacted: `sent Bearer ${R} to it` },
  { text: 'bearer short', redacted: 'bearer short' },
  {
    text: '{"x-api-key":"opaque-123","accept":"json"}',
    redacted: `{"x-api-key":"${R}","accept":"json"}`,
  },
  { text: "{ 'X-Goog-Api-Key': 'opaque-456' }", redacted: `{ 'X-Goog-Api-Key': '${R}' }` },
  { text: '"authorization":"Basic dXNlcjpwYXNz"', redacted: `"authorization":"Basic ${R}"` },
  { text: 'export OPENAI_API_KEY=opaque789 && run', redacted: `export OPENAI_API_KEY=${R} && run` },
  {
    text: '{"command":"export MY_TOKEN=\\"abc def\\""}',
    redacted: `{"command":"export MY_TOKEN=\\"${R} def\\""}`,
  },
  { text: 'DB_PASSWORD: hunter2, next', redacted: `DB_PASSWORD: ${R}, next` },
  { text: 'https://x.test/?api_key=abc123&q=1', redacted: `https://x.test/?api_key=${R}&q=1` },
  {
    text: 'a task-force-management-plan-2024 here',
    redacted: 'a task-force-management-plan-2024 here',
  },
  { text: 'risk-0123456789abcdefghijklmnop', redacted: 'risk-0123456789abcdefghijklmnop' },
  {
    text: '{"max_tokens":64,"usage":{"output_tokens":5}}',
    redacted: '{"max_tokens":64,"usage":{"output_tokens":5}}',
  },
  {
    text: 'at 2024-01-01T12:34:56Z INFO host started',
    redacted: 'at 2024-01-01T12:34:56Z INFO host started',
  },
  { text: 'sk-short and AIzaShort', redacted: 'sk-short and AIzaShort' },
  {
    text: 'plain words: none = here, user=alice',
    redacted: 'plain words: none = here, user=alice',
  },
  { text: 'no secrets: none here', redacted: `no secrets: ${R} here` },
];
