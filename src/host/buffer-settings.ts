// A chat buffer's settings (`BufferSettings`): its configuration (the global one with its
// frontmatter applied), the editor's facts about it, its trust decision and the provider
// environment variables, from one `editor.context` answer of Lua. The host asks only when it holds
// none or they went stale (src/host/editor-state.ts keeps them; docs/architecture.md, "The
// message budget").
import { loadYaml } from '../core/util/yaml.js';
import { environmentVariables } from '../core/secrets/chain.js';
import type { LuaBridge } from '../editor/lua.js';
import type {
  ContextAnswer,
  ContextParams,
  EditorFacts,
  FrontmatterRequest,
  TrustState,
} from '../editor/protocol/wire.js';
import { type Config, parseConfig } from '../core/config/config.js';
import type { ConfigStore, HeldConfig } from './config.js';
import type { ChatDocument, Message } from '../core/chat/ast.js';
import {
  applyFrontmatter,
  type ConfigOp,
  type FrontmatterApproval,
  type FrontmatterOps,
  jsonFrontmatter,
  type ToolNames,
  type YamlParser,
  yamlFrontmatter,
} from '../core/config/frontmatter.js';
import { applySwitched } from '../core/config/switched.js';
import { type RefusedOp, trustDigest } from '../core/config/trust.js';
import { PROVIDERS } from './providers.js';

export type { ContextAnswer, EditorFacts, FrontmatterRequest, TrustState };

export interface BufferSettings {
  /** The buffer's configuration: the global one with its frontmatter applied. */
  config: Config;
  facts: EditorFacts;
  /** The non-empty values of `KNOWN_ENV` in Neovim's environment (users may `:let $X = …`). */
  env: Record<string, string>;
  /** The frontmatter's `tools.auto_approve`, when it sets or edits it. */
  approval?: FrontmatterApproval;
  /** The frontmatter's other keys (template variables). */
  variables: Record<string, unknown>;
  /** The frontmatter's operations, as applied. */
  ops: ConfigOp[];
  /** Where options below the frontmatter came from (asked for `:Flemma status`). */
  origins?: Record<string, string>;
  /**
   * Why the buffer cannot go on: its frontmatter failed (the message names the line) or runs Lua
   * in a file that is not trusted. Nothing is sent or run while it is set.
   */
  problem?: string;
  /** The problem is that the file's Lua may not run (not trusted, or denied). */
  untrusted?: boolean;
  /** The buffer's trust decision (one per buffer, whatever its frontmatter's language). */
  trust: TrustState;
  /** Frontmatter operations not applied because the file is not trusted. */
  refused: RefusedOp[];
  /** The digest the trust decision was made for (`trustDigest`), when a tree was given. */
  digest?: string;
}

/** What is assumed when Lua said nothing: not trusted (fail closed). */
const NOT_TRUSTED: TrustState = { trusted: false, why: 'untrusted' };

/** The variables every provider reads by default (its credential and base URL). */
export const KNOWN_ENV: readonly string[] = [
  ...new Set([
    ...Object.values(PROVIDERS).flatMap((entry) => {
      const credential = entry.credential({});
      return [
        ...(credential === undefined ? [] : environmentVariables(credential)),
        ...(entry.baseUrlEnv === undefined ? [] : [entry.baseUrlEnv]),
      ];
    }),
    // gcloud's service account for Vertex (see src/core/secrets/builtins.ts).
    'VERTEX_SERVICE_ACCOUNT',
  ]),
];

/** A question about a buffer for Lua (`editor.context`, or carried by another call). */
export interface SettingsQuestion {
  params: ContextParams;
  /** The configuration the host held when it asked (Lua sends none when it is current). */
  asked?: HeldConfig;
  /** Where a configuration the answer carries is kept. */
  store?: ConfigStore;
  variables: Record<string, unknown>;
  /** A problem found before asking (a JSON frontmatter that does not parse). */
  problem?: string;
  /** The problem is that the file's Lua may not run (not trusted, or denied). */
  untrusted?: boolean;
}

export interface SettingsOptions {
  /** Ask for where each option came from (`:Flemma status`). */
  origins?: boolean;
  /** Each message's part of the trust digest, kept between questions (`trustDigest`). */
  memo?: WeakMap<Message, string>;
  /** The configuration the host holds: Lua sends it again only when it changed. */
  config?: ConfigStore;
}

/** The question for a buffer whose tree is `document`. */
export async function settingsQuestion(
  bufnr: number,
  document?: ChatDocument,
  options: SettingsOptions = {},
): Promise<SettingsQuestion> {
  const question: SettingsQuestion = { params: { bufnr, names: KNOWN_ENV }, variables: {} };
  if (options.config !== undefined) {
    question.store = options.config;
    const held = options.config.held();
    if (held !== undefined) {
      question.asked = held;
      question.params.generation = held.generation;
    }
  }
  if (options.origins === true) question.params.origins = true;
  if (document !== undefined) question.params.digest = trustDigest(document, options.memo);
  const frontmatter = document?.frontmatter;
  if (frontmatter === undefined) return question;
  const language = frontmatter.language.toLowerCase();
  const line = frontmatter.span.startLine + 1;
  if (language === 'lua') {
    question.params.frontmatter = { code: frontmatter.code, line };
    return question;
  }
  let parsed: FrontmatterOps | { error: string };
  if (language === 'json') {
    parsed = jsonFrontmatter(frontmatter.code, line);
  } else if (language === 'yaml' || language === 'yml') {
    // NOTE: loaded on first use (lazy bundle), like the SDKs.
    const yaml = (await loadYaml()) as unknown as YamlParser;
    parsed = yamlFrontmatter(frontmatter.code, line, yaml);
  } else {
    // A language registered from Lua: Lua parses it, and checks what it sets.
    question.params.frontmatter = { custom: language, code: frontmatter.code, line };
    return question;
  }
  if ('error' in parsed) question.problem = parsed.error;
  else {
    question.variables = parsed.variables;
    question.params.frontmatter = { ops: parsed.ops };
  }
  return question;
}

/** The buffer's context from Lua's answer: the frontmatter's operations applied over `config`. */
export function resolveSettings(
  question: SettingsQuestion,
  answer: ContextAnswer,
  tools: ToolNames = NO_TOOLS,
): BufferSettings {
  let problem = question.problem;
  const trust: TrustState =
    answer.trust?.trusted === true
      ? { trusted: true, why: answer.trust.why ?? 'allowed' }
      : { ...NOT_TRUSTED, why: answer.trust?.why ?? NOT_TRUSTED.why };
  const placeholders = answer.trust?.placeholders;
  // NOTE: an empty Lua table arrives as an array.
  if (!trust.trusted && typeof placeholders === 'object' && !Array.isArray(placeholders)) {
    trust.placeholders = placeholders;
  }
  const global =
    question.store === undefined
      ? parseConfig(answer.config)
      : question.store.accept(answer, question.asked);
  // The chat's own `:Flemma switch` is over the global values, under the frontmatter.
  const config =
    answer.switched === undefined || answer.switched.length === 0
      ? global
      : parseConfig(applySwitched(global.data, answer.switched));
  // NOTE: an empty Lua table arrives as an array (or an empty object).
  const context: BufferSettings = {
    config,
    facts: answer.facts,
    env: Array.isArray(answer.env) ? {} : answer.env,
    variables: question.variables,
    ops: [],
    trust,
    refused: [],
  };
  if (question.params.digest !== undefined) context.digest = question.params.digest;
  if (answer.origins !== undefined) {
    context.origins = Array.isArray(answer.origins) ? {} : answer.origins;
  }
  const result = answer.frontmatter;
  if (problem === undefined && result !== undefined) {
    if ('untrusted' in result) {
      problem = result.untrusted;
      context.untrusted = true;
    } else if ('error' in result) problem = result.error;
    else {
      const request = question.params.frontmatter;
      // Lua and custom languages: the variables come from Lua.
      if (request !== undefined && 'code' in request && result.variables !== undefined) {
        context.variables = Array.isArray(result.variables) ? {} : result.variables;
      }
      const ops = Array.isArray(result.ops) ? result.ops : [];
      context.ops = ops;
      // NOTE: without operations the configuration is the global one, parsed once.
      if (ops.length > 0) {
        const applied = applyFrontmatter(config.data, ops, tools, trust);
        if (applied.error !== undefined) problem = applied.error;
        context.config = parseConfig(applied.config);
        context.refused = applied.refused;
        if (applied.approval !== undefined) context.approval = applied.approval;
      }
    }
  }
  if (problem !== undefined) context.problem = problem;
  return context;
}

/**
 * Ask the editor about a buffer (one round trip) and resolve its configuration: the global
 * snapshot with the frontmatter of `document` applied (Lua frontmatter runs in Neovim, if the
 * file is trusted; JSON frontmatter is read here and checked there).
 */
export async function askBufferSettings(
  lua: Pick<LuaBridge, 'call'>,
  bufnr: number,
  document?: ChatDocument,
  tools?: ToolNames,
  options: SettingsOptions = {},
): Promise<BufferSettings> {
  const question = await settingsQuestion(bufnr, document, options);
  const answer = await lua.call('editor.context', question.params);
  return resolveSettings(question, answer, tools);
}

/** When the caller has no tool registry at hand: every tool name is accepted. */
const NO_TOOLS: ToolNames = { enabled: [], has: () => true, suggest: () => undefined };
