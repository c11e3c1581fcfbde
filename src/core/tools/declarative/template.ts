// The template language of declarative tools (Vega's documented syntax, not the `.chat` template
// engine): `{{param}}`, `{{param | default:10}}`, `{{if flag}}…{{else}}…{{end}}`, `${ENV}`.
//
// Decisions:
// - A template is compiled once, when its tool is loaded, so syntax errors (an unclosed `if`, a
//   stray `end`, an unknown filter) are load-time errors that name the file.
// - `{{p}}` with no value (absent or null) and no `| default:` is an error naming `p`, never an
//   empty string: a request with a silently missing part is worse than a clear failure.
// - `${NAME}` reads the environment only for names on the allowlist; any other name is an error
//   (`env var HOME not allowed`), so a tool definition cannot smuggle secrets into a URL or an
//   output the model reads. An allowed variable that is unset is an error too.
// - `$${NAME}` is a literal `${NAME}`.
// - Values are written as text: strings as they are, numbers and booleans with `String`, arrays
//   and objects as JSON. `encode` (used for URLs) is applied to every interpolated value, never
//   to the template's own text.
// - `{{if x}}` is true unless `x` is absent, null, false, 0, '' or an empty array.

export class TemplateError extends Error {
  override readonly name = 'TemplateError';
}

type Node =
  | { kind: 'text'; text: string }
  | { kind: 'param'; name: string; fallback?: string }
  | { kind: 'env'; name: string }
  | { kind: 'if'; name: string; then: Node[]; otherwise: Node[] };

export interface RenderOptions {
  /** Where `${NAME}` is read from (default: nothing is set). */
  env?: Readonly<Record<string, string | undefined>>;
  /** The names `${NAME}` may read. */
  allowEnv?: readonly string[];
  /** Leave `${NAME}` as it is written (for previews, which must never show a secret). */
  keepEnv?: boolean;
  /** Applied to each interpolated value (e.g. `encodeURIComponent` in a URL). */
  encode?: (value: string) => string;
}

export interface Template {
  readonly source: string;
  /** Every parameter the template names (in `{{p}}` and `{{if p}}`). */
  readonly params: readonly string[];
  /** Every `${NAME}` it reads. */
  readonly env: readonly string[];
  /** Set when the whole template is one `{{p}}` tag: its value can keep its JSON type. */
  readonly single: { name: string; fallback?: string } | undefined;
  render(values: Readonly<Record<string, unknown>>, options?: RenderOptions): string;
}

const NAME = /^[A-Za-z_][A-Za-z0-9_-]*$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

type IfNode = Extract<Node, { kind: 'if' }>;

/** One parse of a template: the nodes so far, the open `{{if}}`s, the names read. */
class Parser {
  readonly root: Node[] = [];
  readonly params = new Set<string>();
  readonly env = new Set<string>();
  private readonly stack: { node: IfNode; inElse: boolean }[] = [];
  private text = '';

  constructor(private readonly source: string) {}

  parse(): void {
    const { source } = this;
    let i = 0;
    while (i < source.length) {
      if (source.startsWith('$${', i)) {
        const close = source.indexOf('}', i + 3);
        if (close === -1) throw new TemplateError(`unclosed '$\${' at offset ${i}`);
        this.text += source.slice(i + 1, close + 1);
        i = close + 1;
      } else if (source.startsWith('${', i)) {
        i = this.envRef(i);
      } else if (source.startsWith('{{', i)) {
        const close = source.indexOf('}}', i + 2);
        if (close === -1) throw new TemplateError(`unclosed '{{' at offset ${i}`);
        this.flush();
        this.tag(source.slice(i + 2, close).trim());
        i = close + 2;
      } else {
        this.text += source.charAt(i);
        i += 1;
      }
    }
    this.flush();
    if (this.stack.length > 0) {
      throw new TemplateError(
        `'{{if ${this.stack[this.stack.length - 1]?.node.name ?? ''}}}' is never closed with '{{end}}'`,
      );
    }
  }

  /** Where the next node goes: the open `{{if}}`'s branch, or the top. */
  private target(): Node[] {
    const top = this.stack[this.stack.length - 1];
    if (top === undefined) return this.root;
    return top.inElse ? top.node.otherwise : top.node.then;
  }

  private flush(): void {
    if (this.text !== '') this.target().push({ kind: 'text', text: this.text });
    this.text = '';
  }

  /** `${NAME}` at `i`; answers where the text goes on. */
  private envRef(i: number): number {
    const close = this.source.indexOf('}', i + 2);
    if (close === -1) throw new TemplateError(`unclosed '\${' at offset ${i}`);
    const name = this.source.slice(i + 2, close).trim();
    if (!ENV_NAME.test(name)) throw new TemplateError(`invalid environment variable '${name}'`);
    this.flush();
    this.env.add(name);
    this.target().push({ kind: 'env', name });
    return close + 1;
  }

  /** The inside of a `{{…}}`: `end`, `else`, `if p`, or a parameter with its filters. */
  private tag(tag: string): void {
    if (tag === 'end') {
      if (this.stack.pop() === undefined) throw new TemplateError("'{{end}}' without '{{if …}}'");
      return;
    }
    if (tag === 'else') {
      const top = this.stack[this.stack.length - 1];
      if (top === undefined || top.inElse) {
        throw new TemplateError("'{{else}}' without '{{if …}}'");
      }
      top.inElse = true;
      return;
    }
    const cond = /^if\s+(.*)$/s.exec(tag);
    if (cond !== null) {
      const name = (cond[1] ?? '').trim();
      if (!NAME.test(name)) throw new TemplateError(`invalid condition '{{${tag}}}'`);
      this.params.add(name);
      const node: IfNode = { kind: 'if', name, then: [], otherwise: [] };
      this.target().push(node);
      this.stack.push({ node, inElse: false });
      return;
    }
    this.target().push(parseParam(tag, this.params));
  }
}

/** Parses `source`; throws a `TemplateError` that says what is wrong and where. */
export function compileTemplate(source: string): Template {
  const parser = new Parser(source);
  parser.parse();
  const { root } = parser;
  const only = root.length === 1 ? root[0] : undefined;
  const single =
    only?.kind === 'param'
      ? only.fallback === undefined
        ? { name: only.name }
        : { name: only.name, fallback: only.fallback }
      : undefined;
  return {
    source,
    params: [...parser.params],
    env: [...parser.env],
    single,
    render: (values, options = {}) => renderNodes(root, values, options),
  };
}

function parseParam(tag: string, params: Set<string>): Node {
  const [head, ...filters] = tag.split('|');
  const name = (head ?? '').trim();
  if (!NAME.test(name)) throw new TemplateError(`invalid tag '{{${tag}}}'`);
  params.add(name);
  if (filters.length === 0) return { kind: 'param', name };
  if (filters.length > 1) throw new TemplateError(`'{{${tag}}}': only one filter is allowed`);
  const filter = (filters[0] ?? '').trim();
  const match = /^default\s*:(.*)$/s.exec(filter);
  if (match === null) {
    throw new TemplateError(
      `'{{${tag}}}': unknown filter '${filter}' (the filter is default:<value>)`,
    );
  }
  return { kind: 'param', name, fallback: unquote((match[1] ?? '').trim()) };
}

function unquote(value: string): string {
  if (value.length >= 2 && (value[0] === '"' || value[0] === "'") && value.endsWith(value[0])) {
    return value.slice(1, -1);
  }
  return value;
}

/** A value is "there" unless it is undefined or null. */
export function hasValue(value: unknown): boolean {
  return value !== undefined && value !== null;
}

export function truthy(value: unknown): boolean {
  if (!hasValue(value) || value === false || value === 0 || value === '') return false;
  return !(Array.isArray(value) && value.length === 0);
}

/** A value as template text: strings as they are, numbers and booleans as text, others as JSON. */
export function valueText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') {
    return String(value);
  }
  return JSON.stringify(value);
}

function renderNodes(
  nodes: readonly Node[],
  values: Readonly<Record<string, unknown>>,
  options: RenderOptions,
): string {
  const encode = options.encode ?? ((s: string) => s);
  let out = '';
  for (const node of nodes) {
    switch (node.kind) {
      case 'text':
        out += node.text;
        break;
      case 'param': {
        const value = Object.hasOwn(values, node.name) ? values[node.name] : undefined;
        if (hasValue(value)) out += encode(valueText(value));
        else if (node.fallback !== undefined) out += encode(node.fallback);
        else {
          throw new TemplateError(
            `template parameter '${node.name}' has no value (give it a default with {{${node.name} | default:…}}, or put it inside {{if ${node.name}}}…{{end}})`,
          );
        }
        break;
      }
      case 'env':
        if (options.keepEnv === true) {
          out += `\${${node.name}}`;
          break;
        }
        out += encode(envValue(node.name, options));
        break;
      case 'if': {
        const value = Object.hasOwn(values, node.name) ? values[node.name] : undefined;
        out += renderNodes(truthy(value) ? node.then : node.otherwise, values, options);
        break;
      }
    }
  }
  return out;
}

function envValue(name: string, options: RenderOptions): string {
  if (!(options.allowEnv ?? []).includes(name)) {
    throw new TemplateError(
      `env var ${name} not allowed (add it to tools.declarative.env to let tool definitions read it)`,
    );
  }
  const value = options.env?.[name];
  if (value === undefined) throw new TemplateError(`env var ${name} is not set`);
  return value;
}

/** Compiles and renders in one step (tests, one-off strings). */
export function renderTemplate(
  source: string,
  values: Readonly<Record<string, unknown>>,
  options?: RenderOptions,
): string {
  return compileTemplate(source).render(values, options);
}
