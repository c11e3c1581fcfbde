// Where each chat's agent session is kept between Neovims (docs/agents.md, "Sessions"): a file of
// Flemma's state directory, `stdpath("state")/flemma/acp-sessions.json`, by chat file and
// agent. Not in the chat file itself: a shared file cannot name a session for the agent to load,
// and the chat's text (which its trust digest covers) does not change under the user's feet.
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { SessionMark } from '../../core/acp/prompt.js';

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
  private static file(stateDir: string): string {
    return join(stateDir, 'flemma', 'acp-sessions.json');
  }

  private static read(stateDir: string): Stored {
    try {
      const parsed: unknown = JSON.parse(readFileSync(SessionStore.file(stateDir), 'utf8'));
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
  get(stateDir: string, chat: string, agent: string): SessionMark | undefined {
    return SessionStore.read(stateDir)[keyOf(chat, agent)];
  }

  /**
   * Keep the chat's session, at once (a turn may be the last thing a host does before Neovim
   * quits); whole on disk (a temporary file renamed over it). A failure only loses the resume.
   */
  set(stateDir: string, chat: string, agent: string, mark: SessionMark): void {
    try {
      const stored = SessionStore.read(stateDir);
      stored[keyOf(chat, agent)] = mark;
      const file = SessionStore.file(stateDir);
      mkdirSync(join(stateDir, 'flemma'), { recursive: true, mode: 0o700 });
      const temporary = `${file}.${String(process.pid)}.tmp`;
      writeFileSync(temporary, JSON.stringify(stored), { mode: 0o600 });
      renameSync(temporary, file);
    } catch {
      // The next reopen starts a new session with the transcript.
    }
  }
}
