// `flemma run`'s trust decision, read from Neovim's trust database and Flemma's records as
// lua/flemma/config/trust.lua writes them: allowed by the database's hash or the recorded digest,
// changed, denied, not listed; `--trust` given; the acting statuses of a file not trusted.
import { createHash } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseChat } from '../../src/core/chat/parser.js';
import { trustDigest } from '../../src/core/config/trust.js';
import { decideTrust, nvimStateDir } from '../../src/cli/trust.js';
import { tempDirs } from '../helpers/temp.js';

const tempDir = tempDirs();

const CHAT = '```json\n{"flemma": {"model": "m"}}\n```\n@You:\nHi\n';

interface Case {
  database?: (file: string, bytes: Buffer) => string;
  records?: (file: string) => Record<string, string>;
  text?: string;
  given?: boolean;
}

async function decide(c: Case): Promise<unknown> {
  const root = tempDir('flemma-cli-trust-');
  const env = { XDG_STATE_HOME: join(root, 'state') };
  const state = nvimStateDir(env);
  mkdirSync(join(state, 'flemma'), { recursive: true });
  const file = join(root, 'a.chat');
  const bytes = Buffer.from(c.text ?? CHAT);
  writeFileSync(file, bytes);
  if (c.database) writeFileSync(join(state, 'trust'), c.database(file, bytes));
  if (c.records) {
    writeFileSync(join(state, 'flemma', 'trust.json'), JSON.stringify({ files: c.records(file) }));
  }
  const document = parseChat(bytes.toString('utf8'));
  return decideTrust({ path: file, bytes, document, given: c.given ?? false, env });
}

const sha = (bytes: Buffer | string): string => createHash('sha256').update(bytes).digest('hex');

describe("flemma run's trust", () => {
  it.each<[string, Case, unknown]>([
    ['not listed', {}, { trusted: false, why: 'untrusted' }],
    ['given with --trust', { given: true }, { trusted: true, why: 'given' }],
    [
      "listed with the file's hash",
      { database: (file, bytes) => `${sha(bytes)} ${file}\n` },
      { trusted: true, why: 'allowed' },
    ],
    [
      'listed and its digest recorded',
      {
        database: (file) => `${sha('older text')} ${file}\n`,
        records: (file) => ({ [file]: trustDigest(parseChat(CHAT)) }),
      },
      { trusted: true, why: 'allowed' },
    ],
    [
      'listed, changed since',
      { database: (file) => `${sha('older text')} ${file}\n` },
      { trusted: false, why: 'changed' },
    ],
    ['denied', { database: (file) => `! ${file}\n` }, { trusted: false, why: 'denied' }],
    [
      'not trusted, with statuses that act',
      {
        text: '@Assistant:\n**Tool Use:** `t1`\n```json\n{}\n```\n@You:\n**Tool Result:** `t1`\n\n```flemma:tool status=approved name=bash\n```\n',
      },
      { trusted: false, why: 'untrusted', placeholders: { t1: 'approved' } },
    ],
  ])('%s', async (_name, c, expected) => {
    expect(await decide(c)).toEqual(expected);
  });
});
