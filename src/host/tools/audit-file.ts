// The audit of a tool call the `log` hook names (`tools.hooks`): one redacted JSON line in the
// host log and, when `tools.hooks.audit_file` is set, appended to that file.
import { appendFile, mkdir } from 'node:fs/promises';
import { homedir } from 'node:os';
import { expandPath } from '../../core/util/expand-path.js';
import { dirname } from 'node:path';
import type { Config } from '../../core/config/config.js';
import { auditEntry } from '../../core/tools/audit.js';
import { hookConfig, hookMatch } from '../../core/tools/policy.js';
import type { ToolDefinition } from '../../core/tools/registry.js';
import type { FileLogger } from '../log.js';

/** Writes the entry of one call; a file that cannot be written is a warning (`warn(key, text)`). */
export async function auditCall(
  logger: Pick<FileLogger, 'info' | 'redactor'>,
  warn: (key: string, message: string) => void,
  config: Config,
  fields: Parameters<typeof auditEntry>[0],
  def: ToolDefinition,
): Promise<void> {
  const raw = config.tools['hooks'];
  const match = hookMatch(def, hookConfig(raw));
  if (!match.matched || match.action !== 'log') return;
  const line = JSON.stringify(auditEntry(fields, logger.redactor));
  logger.info(`audit ${line}`);
  const file =
    typeof raw === 'object' && raw !== null
      ? (raw as Record<string, unknown>)['audit_file']
      : undefined;
  if (typeof file !== 'string' || file === '') return;
  try {
    const path = expandPath(file, process.env, homedir());
    if (path === undefined) throw new Error(`a variable in ${file} is not set`);
    await mkdir(dirname(path), { recursive: true });
    await appendFile(path, line + '\n', 'utf8');
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error);
    warn(`audit:${file}`, `Could not write the tool audit file ${file}: ${why}`);
  }
}
