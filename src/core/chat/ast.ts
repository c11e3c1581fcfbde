// The `.chat` document tree: what the parser produces and every feature reads.
//
// Positions: lines are 1-based and inclusive; columns, where present, are 0-based UTF-8 byte
// offsets into the line (start inclusive, end exclusive), as Neovim's extmark API counts them.

export interface Span {
  startLine: number;
  endLine: number;
  /** Byte column where the node starts on `startLine` (absent: the whole line). */
  startCol?: number;
  /** Byte column where the node ends on `endLine`, exclusive (absent: the whole line). */
  endCol?: number;
}

export type Severity = 'error' | 'warning' | 'info';

export type DiagnosticCode =
  | 'frontmatter-language'
  | 'frontmatter-unclosed'
  | 'tool-use-json'
  | 'tool-use-unclosed-fence'
  | 'tool-use-missing-fence'
  | 'tool-result-unclosed-fence'
  | 'tool-result-missing-fence'
  | 'tool-result-orphaned'
  | 'tool-result-duplicate'
  | 'tool-use-unresolved'
  | 'tool-use-duplicate-id'
  | 'thinking-unclosed'
  | 'fence-unclosed'
  | 'placeholder-status';

export interface Diagnostic {
  severity: Severity;
  code: DiagnosticCode;
  message: string;
  span: Span;
}

/** The roles the pipeline sends; any other `@Word:` starts a message that is kept but not sent. */
export type KnownRole = 'System' | 'You' | 'Assistant';

export interface Frontmatter {
  kind: 'frontmatter';
  /** The language tag as written (`lua`, `json`, …); compare case-insensitively. */
  language: string;
  /** The lines between the fences, joined with `\n`. */
  code: string;
  /** From the opening fence (line 1) to the closing fence. */
  span: Span;
}

export interface TextSegment {
  kind: 'text';
  value: string;
  span: Span;
}

/** `{{ expression }}` in `@System:` / `@You:` text; evaluated later. */
export interface ExpressionSegment {
  kind: 'expression';
  code: string;
  trimBefore: boolean;
  trimAfter: boolean;
  span: Span;
}

/** `{% statements %}` in `@System:` / `@You:` text; evaluated later. */
export interface CodeSegment {
  kind: 'code';
  code: string;
  trimBefore: boolean;
  trimAfter: boolean;
  span: Span;
}

/** `@./path`, `@../path`, `@//abs`, `@~/path`, optionally with `;type=mime`; resolved later. */
export interface FileReferenceSegment {
  kind: 'file_reference';
  /** The reference as written, without the leading `@` (and without stripped punctuation). */
  raw: string;
  /** The path after URL-decoding: `./x`, `../x`, `/abs`, `~/x`. */
  path: string;
  /** The `;type=` override, if any. */
  mime?: string;
  /**
   * `@mcp:<server>:<uri>`: the MCP server whose resource this is (`path` is then the URI, as
   * written). Absent for a file.
   */
  server?: string;
  span: Span;
}

export interface ThinkingSignature {
  /** The provider that produced the signature (`anthropic`, `openai`, `vertex`, …). */
  provider: string;
  value: string;
}

export interface ThinkingSegment {
  kind: 'thinking';
  content: string;
  signature?: ThinkingSignature;
  redacted: boolean;
  /** Written as `<thinking provider:signature="…"/>` (no content). */
  selfClosing: boolean;
  span: Span;
}

/** The fence that wraps a tool's input or result. */
export interface Fence {
  /** The backtick run, e.g. "```" or "````". */
  ticks: string;
  /** The language tag after the ticks (`json`, `flemma:tool`, ``), as written. */
  language: string;
  /** The rest of the opening line after the tag, trimmed (`status=pending`). */
  info: string;
  /** Line of the opening fence. */
  openLine: number;
  /** Line of the closing fence. */
  closeLine: number;
}

export interface ToolUseSegment {
  kind: 'tool_use';
  id: string;
  name: string;
  /** The decoded JSON input (`null` stays `null`). */
  input: unknown;
  fence: Fence;
  /** From the header line to the closing fence. */
  span: Span;
}

/** The status of a tool result that is still waiting to become a real result. */
export type PlaceholderStatus = 'pending' | 'approved' | 'denied' | 'rejected' | 'aborted';

export const PLACEHOLDER_STATUSES: readonly PlaceholderStatus[] = [
  'pending',
  'approved',
  'denied',
  'rejected',
  'aborted',
];

export interface Placeholder {
  status: PlaceholderStatus;
  /**
   * `fence`: ```` ```flemma:tool status=… ```` (the form this plugin writes);
   * `suffix`: `**Tool Result:** \`id\` (pending)` with a plain fence (files from Flemma 0.11).
   */
  form: 'fence' | 'suffix';
}

export interface ToolResultSegment {
  kind: 'tool_result';
  toolUseId: string;
  /** The fence body as written (for a placeholder: whatever the user typed inside). */
  content: string;
  /** `(error)` in the header: a finished result that reports a failure. */
  isError: boolean;
  /** Set while the result is a placeholder; absent for a finished result. */
  placeholder?: Placeholder;
  /** Other `key=value` / words of the header suffix, kept as written. */
  meta?: Record<string, string>;
  fence: Fence;
  /** The body of a finished result, with templates and file references recognised. */
  segments: (TextSegment | ExpressionSegment | CodeSegment | FileReferenceSegment)[];
  /** From the header line to the closing fence. */
  span: Span;
}

/**
 * `/name args` on a line of its own in a `@You:` message (outside code fences and tool blocks):
 * a slash command (docs/slash-commands.md). Never sent as text; the host resolves it through
 * the registry in Neovim before the send.
 */
export interface SlashCommandSegment {
  kind: 'slash_command';
  /** The name as written: `thinking`, `flemma:thinking`, `user:pirate`. */
  name: string;
  /** What follows the name, trimmed ('' when nothing does). */
  args: string;
  span: Span;
}

/** `<!-- flemma:aborted: message -->`: the reply was interrupted. */
export interface AbortedSegment {
  kind: 'aborted';
  message: string;
  span: Span;
}

export type UserSegment =
  | TextSegment
  | ExpressionSegment
  | CodeSegment
  | FileReferenceSegment
  | ToolResultSegment
  | SlashCommandSegment;

export type AssistantSegment = TextSegment | ThinkingSegment | ToolUseSegment | AbortedSegment;

export type Segment = UserSegment | AssistantSegment;

export interface Message {
  kind: 'message';
  /** The word after `@`, as written (case-sensitive). */
  role: string;
  segments: Segment[];
  /** From the marker line to the line before the next message (trailing blank lines included). */
  span: Span;
}

export interface ChatDocument {
  kind: 'document';
  frontmatter?: Frontmatter;
  messages: Message[];
  diagnostics: Diagnostic[];
  /** Number of lines parsed. */
  lineCount: number;
}

export function isKnownRole(role: string): role is KnownRole {
  return role === 'System' || role === 'You' || role === 'Assistant';
}
