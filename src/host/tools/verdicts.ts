// What a call that does not run answers the model: arguments that were not JSON, a tool that does
// not exist, a policy that blocks it, the user's rejection (or the tool's own wording of it), a
// cancel. Phase 1 asks `early` before the approval chain; Phase 2 writes `resolution`.
import { resolutionText } from '../../core/chat/edits.js';
import type { ToolBlock } from '../../core/chat/edits.js';
import type { Logger } from '../../core/log.js';
import { policyErrorText } from '../../core/tools/policy.js';
import type { ToolRegistry } from '../../core/tools/registry.js';
import type { Config } from '../../core/config/config.js';

/** CodeCompanion's answer to a call of a tool that does not exist. */
export function notFoundText(name: string, available: readonly string[]): string {
  if (available.length === 0) return `Tool \`${name}\` not found. No tools available`;
  const list = [...available]
    .sort()
    .map((tool) => `\`${tool}\``)
    .join(', ');
  return `Tool \`${name}\` not found. The available tools are: ${list}`;
}

export interface VerdictDeps {
  registry: ToolRegistry;
  logger: Pick<Logger, 'warn'>;
  /** Every tool source answered (before that, a name may still come). */
  ready(): boolean;
  /** The policy of the buffer's configuration blocks the tool. */
  policyBlocks(name: string, config: Config): boolean;
}

export class Verdicts {
  /** Error texts for calls that cannot run at all, by tool id (written by Phase 2). */
  private readonly preresolvedTexts = new Map<string, string>();
  /** Calls whose arguments did not parse, by tool id: the tool's name and the parser's message. */
  private readonly invalidInput = new Map<string, { name: string; reason: string }>();

  constructor(private readonly deps: VerdictDeps) {}

  /** The error text Phase 1 found for a call that cannot run, if any. */
  preresolved(id: string): string | undefined {
    return this.preresolvedTexts.get(id);
  }

  /** A reply's tool call came with arguments that are not JSON (the send says so). */
  markInvalidInput(id: string, name: string, reason: string): void {
    this.invalidInput.set(id, { name, reason });
  }

  /**
   * The error result of a call that cannot run, or undefined: arguments that did not parse
   * (CodeCompanion's `You made an error in calling the X tool: "…"`), or a tool that does not exist
   * (``Tool `foo` not found. The available tools are: …``; only once every tool source answered).
   * Phase 2 writes it (`resolution`).
   */
  early(id: string, name: string): string | undefined {
    const invalid = this.invalidInput.get(id);
    let text: string | undefined;
    if (invalid !== undefined) {
      this.invalidInput.delete(id);
      text = `You made an error in calling the ${invalid.name} tool: "${invalid.reason}"`;
    } else if (this.deps.registry.resolve(name) === undefined && this.deps.ready()) {
      text = notFoundText(
        name,
        this.deps.registry
          .list()
          .filter((def) => def.enabled !== false)
          .map((def) => def.name),
      );
    }
    if (text !== undefined) this.preresolvedTexts.set(id, text);
    return text;
  }

  /** The error result Phase 2 writes for a block that will not run. */
  async resolution(
    bufnr: number,
    block: ToolBlock,
    status: 'denied' | 'rejected' | 'aborted',
    config: Config,
  ): Promise<string> {
    if (status === 'rejected') {
      return this.rejection(bufnr, block.id, block.name, block.input, block.content);
    }
    if (status === 'aborted') return resolutionText(status, block.content, block.abortMessage);
    if (this.deps.policyBlocks(block.name, config)) return policyErrorText(block.name);
    return this.preresolvedTexts.get(block.id) ?? resolutionText(status, block.content);
  }

  /**
   * The error text of a cancelled call: the tool's own formatter when it has one, else
   * `The user cancelled the execution of the <name> tool` (CodeCompanion's wording).
   */
  async cancellation(bufnr: number, id: string, name: string, input: unknown): Promise<string> {
    const format = this.deps.registry.resolve(name)?.formatCancelled;
    if (format !== undefined) {
      try {
        const text = await format(input, { bufnr, toolId: id });
        if (typeof text === 'string' && text !== '') return text;
      } catch (error) {
        this.deps.logger.warn(`formatting the cancellation of ${name} (${id}) failed`, error);
      }
    }
    return `The user cancelled the execution of the ${name} tool`;
  }

  /**
   * The error text of a rejected call: the tool's own rejection formatter when it has one (its
   * `reason` is what the user typed into the block), else the default (`resolutionText`).
   */
  async rejection(
    bufnr: number,
    id: string,
    name: string,
    input: unknown,
    content: string,
  ): Promise<string> {
    const format = this.deps.registry.get(name)?.formatRejected;
    if (format !== undefined) {
      try {
        const text = await format(content.trim(), input, { bufnr, toolId: id });
        if (typeof text === 'string' && text !== '') return text;
      } catch (error) {
        this.deps.logger.warn(`formatting the rejection of ${name} (${id}) failed`, error);
      }
    }
    return resolutionText('rejected', content);
  }
}
