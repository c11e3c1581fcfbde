// The one way the host's services speak to the user (`Flemma: …` in Neovim). A port, so that the
// core and the services never build the editor's message themselves.
export interface Notifier {
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}
