// The parts of a buffer's configuration the tool services read (the snapshot Lua sends, with the
// frontmatter applied).
export type ToolsConfig = Record<string, unknown> & {
  max_concurrent?: number;
  default_timeout?: number;
  show_spinner?: boolean;
  cursor_after_result?: 'result' | 'stay' | 'next';
  background_after?: number;
  autopilot?: { enabled?: boolean };
};

export interface ConfigSnapshot {
  tools?: ToolsConfig;
  sandbox?: Record<string, unknown>;
}
