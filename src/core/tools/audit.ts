// Audit entries for tools matched by the `log` hook (seed 001, Flynn): one entry per call,
// `{tool, args, success, durationMs}`, with secrets in `args` redacted.
//
// Decisions (see docs/policy.md):
// - A value is redacted when its key looks like a secret (password, secret, token, api key,
//   authorization, cookie, credential, private key), and inside any string a bearer token or a
//   provider-style key (`sk-…`, `ghp_…`, `xox…-…`) is replaced, so a secret passed inside a
//   command line or a header map does not reach the log either.
// - The entry also carries `time` (ISO 8601), `id` (the tool-use id), `bufnr`, and `error` when
//   the call failed.

const SECRET_KEY =
  /pass(word|wd|phrase)?$|secret|token|api[-_]?key|authori[sz]ation|cookie|credential|private[-_]?key/i;

const SECRET_TEXT: readonly [RegExp, string][] = [
  [/\b(Bearer|Basic|token)\s+[A-Za-z0-9._~+/=-]{8,}/gi, '$1 [REDACTED]'],
  [/\b(sk|pk|rk)-[A-Za-z0-9_-]{12,}/g, '[REDACTED]'],
  [/\bgh[pousr]_[A-Za-z0-9]{20,}/g, '[REDACTED]'],
  [/\bxox[abposr]-[A-Za-z0-9-]{10,}/g, '[REDACTED]'],
  [/\bAKIA[0-9A-Z]{16}\b/g, '[REDACTED]'],
];

export const REDACTED = '[REDACTED]';

function redactText(text: string): string {
  let out = text;
  for (const [pattern, replacement] of SECRET_TEXT) out = out.replace(pattern, replacement);
  return out;
}

/** A deep copy of `value` with secrets replaced by `[REDACTED]`. */
export function redactSecrets(value: unknown, key?: string): unknown {
  if (key !== undefined && SECRET_KEY.test(key) && value !== null && typeof value !== 'object') {
    return REDACTED;
  }
  if (typeof value === 'string') return redactText(value);
  if (Array.isArray(value)) return value.map((item) => redactSecrets(item));
  if (typeof value === 'object' && value !== null) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
      out[k] = redactSecrets(v, k);
    }
    return out;
  }
  return value;
}

export interface AuditEntry {
  time: string;
  tool: string;
  id: string;
  bufnr: number;
  args: unknown;
  success: boolean;
  durationMs: number;
  error?: string;
}

export function auditEntry(fields: {
  tool: string;
  id: string;
  bufnr: number;
  args: unknown;
  success: boolean;
  durationMs: number;
  error?: string | undefined;
  now?: Date;
}): AuditEntry {
  const entry: AuditEntry = {
    time: (fields.now ?? new Date()).toISOString(),
    tool: fields.tool,
    id: fields.id,
    bufnr: fields.bufnr,
    args: redactSecrets(fields.args ?? {}),
    success: fields.success,
    durationMs: Math.round(fields.durationMs),
  };
  if (fields.error !== undefined) entry.error = redactText(fields.error);
  return entry;
}
