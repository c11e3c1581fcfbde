// The configuration the host holds: Lua's snapshot parsed once per generation. Lua bumps the
// generation on every `setup()` and run-time change (`config:updated`); each question for the
// editor says which generation the host holds, and Lua sends the snapshot again only when its own
// is another (`editor.context`, `config.snapshot`; docs/rpc.md).
import { type Config, type ConfigData, parseConfig } from '../core/config/config.js';
import type { LuaBridge } from '../editor/lua.js';

/** A parsed configuration and the generation of the snapshot it was read from. */
export interface HeldConfig {
  readonly generation: number;
  readonly config: Config;
}

/** An answer that may carry the snapshot (`editor.context`, `config.snapshot`). */
interface Carried {
  generation?: number;
  config?: ConfigData;
}

export class ConfigStore {
  private current: HeldConfig | undefined;

  /** What the host holds now, to send with a question (undefined: nothing yet). */
  held(): HeldConfig | undefined {
    return this.current;
  }

  /**
   * The configuration an answer stands for: the snapshot it carries (parsed, and held from now
   * on), else the one the host held when it asked (`asked`), which Lua found current.
   */
  accept(answer: Carried, asked: HeldConfig | undefined): Config {
    if (answer.config === undefined) {
      if (asked === undefined) throw new Error('Lua sent no configuration and the host has none');
      return asked.config;
    }
    const config = parseConfig(answer.config);
    if (typeof answer.generation === 'number') {
      this.current = { generation: answer.generation, config };
    }
    return config;
  }

  /** The global configuration (no frontmatter): asks Lua, which answers with a snapshot only when it changed. */
  async get(lua: Pick<LuaBridge, 'call'>): Promise<Config> {
    const asked = this.current;
    const answer = await lua.call(
      'config.snapshot',
      asked === undefined ? {} : { generation: asked.generation },
    );
    return this.accept(answer, asked);
  }
}
