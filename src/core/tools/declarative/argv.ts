// Splitting an `exec` command template into argv elements *before* anything is interpolated, so
// a value can never become more than one argument or reach a shell.
//
// Decisions:
// - The rules are the familiar shell-word ones, without any expansion: whitespace separates
//   words; '…' is literal; "…" is literal except that a backslash escapes `"` and `\`; outside
//   quotes a backslash escapes the next character.
// - A template tag (`{{ … }}`) is never split, so `{{ count | default:10 }}` and
//   `{{if verbose}}--verbose{{end}}` each stay inside one word.
// - A word that was quoted at least once is kept even when it renders empty (`''` is an empty
//   argument); an unquoted word that renders empty (an absent optional flag) is dropped.

export class CommandSyntaxError extends Error {
  override readonly name = 'CommandSyntaxError';
}

export interface CommandWord {
  /** The word's text with quotes and escapes removed; still a template. */
  text: string;
  /** The word had quotes, so it stays even when it renders empty. */
  quoted: boolean;
}

export function splitCommand(command: string): CommandWord[] {
  const words: CommandWord[] = [];
  let current: CommandWord | undefined;
  const word = (): CommandWord => (current ??= { text: '', quoted: false });
  let i = 0;
  while (i < command.length) {
    const ch = command[i] ?? '';
    if (command.startsWith('{{', i)) {
      const close = command.indexOf('}}', i + 2);
      if (close === -1) throw new CommandSyntaxError(`unclosed '{{' in command at offset ${i}`);
      word().text += command.slice(i, close + 2);
      i = close + 2;
      continue;
    }
    if (/\s/u.test(ch)) {
      if (current !== undefined) words.push(current);
      current = undefined;
      i += 1;
      continue;
    }
    if (ch === "'") {
      const close = command.indexOf("'", i + 1);
      if (close === -1) throw new CommandSyntaxError(`unclosed ' in command at offset ${i}`);
      const w = word();
      w.text += command.slice(i + 1, close);
      w.quoted = true;
      i = close + 1;
      continue;
    }
    if (ch === '"') {
      const w = word();
      w.quoted = true;
      i += 1;
      let closed = false;
      while (i < command.length) {
        const c = command[i] ?? '';
        if (c === '"') {
          closed = true;
          i += 1;
          break;
        }
        if (c === '\\' && (command[i + 1] === '"' || command[i + 1] === '\\')) {
          w.text += command[i + 1] ?? '';
          i += 2;
          continue;
        }
        if (command.startsWith('{{', i)) {
          const close = command.indexOf('}}', i + 2);
          if (close === -1) throw new CommandSyntaxError(`unclosed '{{' in command at offset ${i}`);
          w.text += command.slice(i, close + 2);
          i = close + 2;
          continue;
        }
        w.text += c;
        i += 1;
      }
      if (!closed) throw new CommandSyntaxError('unclosed " in command');
      continue;
    }
    if (ch === '\\') {
      if (i + 1 >= command.length) throw new CommandSyntaxError('command ends with a backslash');
      word().text += command[i + 1] ?? '';
      i += 2;
      continue;
    }
    word().text += ch;
    i += 1;
  }
  if (current !== undefined) words.push(current);
  return words;
}

/** An argv as a shell would need it typed (for previews and messages only; nothing runs it). */
export function displayCommand(argv: readonly string[]): string {
  return argv
    .map((arg) =>
      arg !== '' && /^[A-Za-z0-9_@%+=:,./-]+$/u.test(arg)
        ? arg
        : `'${arg.replaceAll("'", `'\\''`)}'`,
    )
    .join(' ');
}
