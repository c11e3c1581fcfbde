// The one redactor of every log line: the host's log, the tool middleware's records, the audit
// file, and (through the same rules file, read at run time) the Lua shim's log lines.
//
// What is redacted is defined once, in `redact-rules.json` next to this file:
// - known secret values: every credential the chain resolved, and the values of environment
//   variables whose names look secret (`*_KEY`, `*_TOKEN`, `*_SECRET`, `*PASSWORD*`, …; the
//   variables the credential chain reads all have such names, see test/unit/redact.test.ts);
// - key-shaped strings: a known prefix (`sk-ant-`, `sk-`, `AIza`, `ya29.`, `eyJ` for JWTs, GitHub,
//   GitLab, Slack and AWS key prefixes) followed by enough key characters;
// - the value after `Bearer`;
// - the value after a secret-looking name and `:` or `=` (`x-api-key: …`, `"authorization":
//   "Basic …"`, `OPENAI_API_KEY=…`, `password='…'`).
//
// Decisions:
// - Every rule is a literal prefix or name followed by a run of characters of a class, so that
//   the JavaScript here and the Lua patterns in lua/flemma/host/redact.lua read the same file and
//   match the same text; neither side has rules of its own.
// - Known values shorter than `min_known_length` are not replaced (they would mangle ordinary
//   words); key-shaped strings and named values are replaced whatever their owner.
// - The rules are linear in the line's length (no start position is tried twice for a name), so
//   a debug log during a stream stays cheap.
import rules from './redact-rules.json' with { type: 'json' };

export const REDACTED: string = rules.marker;

type ClassName = keyof typeof rules.classes;

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&');
}

/** A character class of the rules file (`["A-Z", "_", "-"]`) as a RegExp class body. */
function classBody(name: ClassName): string {
  return rules.classes[name]
    .map((item) => (item.length === 3 && item[1] === '-' ? item : escapeRegExp(item)))
    .join('');
}

const EXACT_NAMES: ReadonlySet<string> = new Set(rules.names.exact);

/**
 * Whether a key, header or variable name looks like it holds a secret; `extra` are more
 * case-insensitive substrings (`tools.middleware.logging.redact`).
 */
export function isSecretName(name: string, extra: readonly string[] = []): boolean {
  const lower = name.toLowerCase();
  return (
    EXACT_NAMES.has(lower) ||
    rules.names.suffixes.some((suffix) => lower.endsWith(suffix)) ||
    rules.names.contains.some((part) => lower.includes(part)) ||
    extra.some((part) => part !== '' && lower.includes(part.toLowerCase()))
  );
}

/** The expressions of the rules (per redactor: they keep their position between calls, `g`, `y`). */
interface Patterns {
  tokens: RegExp;
  schemesAnywhere: RegExp;
  /** A name, where a name starts (never inside one), then `:` or `=` between optional quotes. */
  nameAndSeparator: RegExp;
  /** What a named value is made of (it ends at a blank, a quote, a bracket or punctuation). */
  namedValue: RegExp;
  schemeWord: RegExp;
}

function compilePatterns(): Patterns {
  return {
    tokens: new RegExp(
      '(?<![A-Za-z0-9])(?:' +
        rules.tokens
          .map(
            (rule) =>
              `${escapeRegExp(rule.prefix)}[${classBody(rule.class as ClassName)}]{${String(rule.min)},}`,
          )
          .join('|') +
        ')',
      'g',
    ),
    schemesAnywhere: new RegExp(
      `(?<![A-Za-z0-9])(${rules.schemes_anywhere.map(escapeRegExp).join('|')})([ \\t]+)[${classBody('scheme')}]{${String(rules.scheme_min)},}`,
      'gi',
    ),
    nameAndSeparator: /(?<![A-Za-z0-9_.-])([A-Za-z0-9_.-]+)(\\?["']?[ \t]*[:=][ \t]*\\?["']?)/g,
    namedValue: /[^\s"'`\\,;&|()[\]{}<>=]+/y,
    schemeWord: new RegExp(`(?:${rules.schemes.map(escapeRegExp).join('|')})[ \\t]+`, 'iy'),
  };
}

/**
 * Known secret values and the rules above. One per host (the log, the middleware and the audit
 * file share it); the shim gets the known values from the host (`log.secrets`).
 *
 * Nothing is done before the first use: the expressions are compiled when something is first
 * redacted, and an environment given to `addEnvironmentOnFirstUse` is looked through when
 * something is first redacted, added or asked for (the host's start answers Neovim before its
 * first log line, docs/testing.md).
 */
export class Redactor {
  private readonly values = new Set<string>();
  /** Longest first, so that a secret containing another is replaced whole. */
  private ordered: string[] = [];
  private readonly listeners: (() => void)[] = [];
  /** Environments not looked through yet. */
  private pending: Readonly<Record<string, string | undefined>>[] = [];
  private compiled: Patterns | undefined;

  private get patterns(): Patterns {
    this.compiled ??= compilePatterns();
    return this.compiled;
  }

  /** The environments given so far, looked through (once). */
  private settle(): void {
    if (this.pending.length === 0) return;
    const envs = this.pending;
    this.pending = [];
    for (const env of envs) {
      for (const [name, value] of Object.entries(env)) {
        if (value !== undefined && isSecretName(name)) this.addValue(value);
      }
    }
  }

  /** Remember a secret value (and its JSON-escaped form); returns whether it was new. */
  add(value: unknown): boolean {
    this.settle();
    return this.addValue(value);
  }

  private addValue(value: unknown): boolean {
    if (typeof value !== 'string') return false;
    let added = false;
    for (const form of [value, value.trim(), JSON.stringify(value).slice(1, -1)]) {
      if (form.length < rules.min_known_length || this.values.has(form)) continue;
      this.values.add(form);
      added = true;
    }
    if (!added) return false;
    this.ordered = [...this.values].sort((a, b) => b.length - a.length);
    for (const listener of this.listeners) listener();
    return true;
  }

  /** Remember the values of the variables of `env` whose names look secret. */
  addEnvironment(env: Readonly<Record<string, string | undefined>>): void {
    this.pending.push(env);
    this.settle();
  }

  /**
   * The same, when the redactor is first used (the host's own environment, given as the host
   * starts): `env` is read then, so it must be one that does not change meanwhile.
   */
  addEnvironmentOnFirstUse(env: Readonly<Record<string, string | undefined>>): void {
    this.pending.push(env);
  }

  /** The known values (for the shim's own redaction). */
  known(): string[] {
    this.settle();
    return [...this.ordered];
  }

  /** Called after a new value was added. */
  onChange(listener: () => void): void {
    this.listeners.push(listener);
  }

  /** `text` as it may be logged. */
  text(text: string): string {
    this.settle();
    let out = text;
    for (const secret of this.ordered) {
      if (out.includes(secret)) out = out.split(secret).join(REDACTED);
    }
    return this.shapes(out);
  }

  /** Key-shaped strings, Bearer values and named values in `text` (known values aside). */
  shapes(text: string): string {
    const patterns = this.patterns;
    return this.namedValues(text)
      .replace(patterns.schemesAnywhere, `$1$2${REDACTED}`)
      .replace(patterns.tokens, REDACTED);
  }

  /** `text` with every value after a secret-looking name replaced. */
  private namedValues(text: string): string {
    const { nameAndSeparator: names, schemeWord, namedValue } = this.patterns;
    let out = '';
    let copied = 0;
    names.lastIndex = 0;
    let match: RegExpExecArray | null;
    while ((match = names.exec(text)) !== null) {
      let at = match.index + match[0].length;
      if (!isSecretName(match[1] ?? '')) continue;
      schemeWord.lastIndex = at;
      if (schemeWord.test(text)) at = schemeWord.lastIndex;
      namedValue.lastIndex = at;
      if (!namedValue.test(text)) continue;
      out += text.slice(copied, at) + REDACTED;
      copied = namedValue.lastIndex;
      names.lastIndex = copied;
    }
    return copied === 0 ? text : out + text.slice(copied);
  }

  /**
   * A deep copy of `value` as it may be logged: under a secret-looking key (or one containing
   * an `extra` substring) a plain value becomes the marker; every string is redacted as text.
   */
  value(value: unknown, extra: readonly string[] = [], key?: string): unknown {
    if (key !== undefined && isSecretName(key, extra) && typeof value !== 'object') {
      return value === undefined ? value : REDACTED;
    }
    if (typeof value === 'string') return this.text(value);
    if (Array.isArray(value)) return value.map((item) => this.value(item, extra));
    if (typeof value === 'object' && value !== null) {
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
        out[k] = this.value(v, extra, k);
      }
      return out;
    }
    return value;
  }
}
