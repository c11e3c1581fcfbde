// The one way the host's services speak to the user (`Flemma: …` in Neovim). A port, so that the
// core and the services never build the editor's message themselves.

/** How one message is shown. */
export interface NotifyOptions {
  /** A message with a key replaces the earlier one of the same key (one line per subject). */
  key?: string;
  /**
   * The user asked for this message (`:Flemma tool:why`): on Neovim's command line, when it does
   * not fit on one line, it opens in a scratch buffer instead of being shortened.
   */
  report?: boolean;
}

export interface Notifier {
  info(message: string, options?: NotifyOptions): void;
  warn(message: string, options?: NotifyOptions): void;
  error(message: string, options?: NotifyOptions): void;
}

export type NotifyLevel = keyof Notifier;
