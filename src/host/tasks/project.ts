// The project's agent profiles (docs/tasks.md, "Profiles"): `.flemma/agents/*.chat` in Neovim's
// working directory, read only when the user opted in (`tools.task.project_agents`, which needs
// trust, as `tools.declarative.project` does for the project's tool files). Each file's JSON
// frontmatter is the profile (never Lua: that would run the project's code), its `@System:` the
// system prompt. Read when the `task` tool is offered or called, kept while no file changed.
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { parseChat, splitLines } from '../../core/chat/parser.js';
import {
  type AgentFrontmatter,
  type ProfileSet,
  profileFromChat,
} from '../../core/tasks/profiles.js';

/** Where a project keeps its profiles, below Neovim's working directory. */
export const PROJECT_AGENTS_DIR = join('.flemma', 'agents');

const EMPTY: ProfileSet = { profiles: [], problems: [] };

function decode(language: string, code: string): AgentFrontmatter {
  if (language.toLowerCase() !== 'json') {
    return { error: `a profile's frontmatter must be JSON (not ${language})` };
  }
  try {
    return { data: JSON.parse(code) as unknown };
  } catch (error) {
    return { error: `invalid JSON: ${(error as Error).message}` };
  }
}

export class ProjectAgents {
  /** The last reading of a directory: the files' names and times it was made from. */
  private cache: { key: string; set: ProfileSet } | undefined;

  /** The profiles in `<cwd>/.flemma/agents`; none when it does not exist. */
  read(cwd: string): ProfileSet {
    const dir = join(cwd, PROJECT_AGENTS_DIR);
    let names: string[];
    try {
      names = readdirSync(dir)
        .filter((name) => name.endsWith('.chat'))
        .sort();
    } catch {
      return EMPTY;
    }
    const stamps = names.map((name) => {
      try {
        const stat = statSync(join(dir, name));
        return `${name}:${String(stat.mtimeMs)}:${String(stat.size)}`;
      } catch {
        return name;
      }
    });
    const key = `${dir}\0${stamps.join('\0')}`;
    if (this.cache?.key === key) return this.cache.set;
    const set: ProfileSet = { profiles: [], problems: [] };
    for (const name of names) this.readOne(dir, name, set);
    this.cache = { key, set };
    return set;
  }

  private readOne(dir: string, name: string, set: ProfileSet): void {
    const file = join(PROJECT_AGENTS_DIR, name);
    let text: string;
    try {
      text = readFileSync(join(dir, name), 'utf8');
    } catch (error) {
      set.problems.push(`${file}: ${(error as Error).message}`);
      return;
    }
    const lines = splitLines(text);
    const document = parseChat(text);
    const frontmatter: AgentFrontmatter =
      document.frontmatter === undefined
        ? { error: 'no frontmatter (the profile)' }
        : decode(document.frontmatter.language, document.frontmatter.code);
    const made = profileFromChat(
      name.slice(0, -'.chat'.length),
      file,
      document,
      lines,
      frontmatter,
    );
    if (typeof made === 'string') set.problems.push(made);
    else set.profiles.push(made);
  }
}
