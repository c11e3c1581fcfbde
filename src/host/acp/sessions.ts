// Where each chat's agent session is kept between Neovims (docs/agents.md, "Sessions"): a file of
// Flemma's state directory, `stdpath("state")/flemma/acp-sessions.json`, by chat file and
// agent. Not in the chat file itself: a shared file cannot name a session for the agent to load,
// and the chat's text (which its trust digest covers) does not change under the user's feet.
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { SessionMark } from '../../core/acp/prompt.js';
import { writeAtomic } from '../../files/atomic.js';

type Stored = Record<string, SessionMark>;

function isMark(value: unknown): value is SessionMark {
  if (value === null || typeof value !== 'object') return false;
  const mark = value as Record<string, unknown>;
  return (
    typeof mark['sessionId'] === 'string' &&
    typeof mark['count'] === 'number' &&
    typeof mark['digest'] === 'string'
  );
}

/** The chat's key in the file: its path and the agent. */
function keyOf(chat: string, agent: string): string {
  return `${agent}\u0000${chat}`;
}

export class SessionStore {
  /** One write at a time, in order. */
  private writing: Promise<void> = Promise.resolve();

  private static file(stateDir: string): string {
    return join(stateDir, 'flemma', 'acp-sessions.json');
  }

  private static async read(stateDir: string): Promise<Stored> {
    try {
      const parsed: unknown = JSON.parse(await readFile(SessionStore.file(stateDir), 'utf8'));
      if (parsed === null || typeof parsed !== 'object') return {};
      return Object.fromEntries(
        Object.entries(parsed as Record<string, unknown>).filter(
          (entry): entry is [string, SessionMark] => isMark(entry[1]),
        ),
      );
    } catch {
      return {};
    }
  }

  /** The session the chat's agent was last in, if one was kept. */
  async get(stateDir: string, chat: string, agent: string): Promise<SessionMark | undefined> {
    await this.writing;
    return (await SessionStore.read(stateDir))[keyOf(chat, agent)];
  }

  /** Keep the chat's session (a failure to write only loses the resume). */
  set(stateDir: string, chat: string, agent: string, mark: SessionMark): Promise<void> {
    this.writing = this.writing.then(async () => {
      const stored = await SessionStore.read(stateDir);
      stored[keyOf(chat, agent)] = mark;
      await mkdir(join(stateDir, 'flemma'), { recursive: true, mode: 0o700 });
      await writeAtomic(SessionStore.file(stateDir), JSON.stringify(stored));
    });
    this.writing = this.writing.catch(() => undefined);
    return this.writing;
  }
}
