// Audit entries for tools matched by the `log` hook (docs/policy.md, "`tools.hooks`"): one entry per call,
// `{tool, args, success, durationMs}`, with secrets in `args` redacted.
//
// Decisions (see docs/policy.md):
// - `args` and `error` go through the host's one redactor (src/core/secrets/redact.ts): values
//   under secret-looking names, known secrets (resolved credentials, secret-looking variables of
//   the environment) and key-shaped strings anywhere (`sk-…`, `Bearer …`) become `[REDACTED]`.
// - The entry also carries `time` (ISO 8601), `id` (the tool-use id), `bufnr`, and `error` when
//   the call failed.
import { Redactor } from '../secrets/redact.js';

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

/** What an entry is made of: its fields but the time, which `now` gives (default: now). */
export type AuditFields = Omit<AuditEntry, 'time' | 'error'> & {
  error?: string | undefined;
  now?: Date;
};

export function auditEntry(fields: AuditFields, redactor: Redactor = new Redactor()): AuditEntry {
  const entry: AuditEntry = {
    time: (fields.now ?? new Date()).toISOString(),
    tool: fields.tool,
    id: fields.id,
    bufnr: fields.bufnr,
    args: redactor.value(fields.args ?? {}),
    success: fields.success,
    durationMs: Math.round(fields.durationMs),
  };
  if (fields.error !== undefined) entry.error = redactor.text(fields.error);
  return entry;
}
