// doc/tags, as Neovim's `:helptags doc` writes it, so that `:help flemma` works in a checkout that
// was built but never had `:helptags` run (an install by hand into a package directory). The
// plugin makes the same file on first load when it is missing and the directory is writable
// (lua/flemma/init.lua); test/nvim/helptags.test.ts compares this one with Neovim's.
//
// The format (Neovim's `helptags_one()`): a `*tag*` is a run of characters other than blanks and
// `|` between two stars, with a blank or the line start before it and a blank or the line end
// after it; lines are `tag<Tab>file<Tab>/*tag*` with `\` and `/` escaped in the search pattern,
// sorted byte-wise; `!_TAG_FILE_ENCODING` comes first when a file's first line is not ASCII. A tag
// defined twice is an error (E154), as in Neovim.
import { readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** The tags of one help file: `tag<Tab>file` entries. */
function tagsOf(text, file) {
  const entries = [];
  for (const line of text.split('\n')) {
    let start = line.indexOf('*');
    while (start !== -1) {
      const end = line.indexOf('*', start + 1);
      if (end === -1) break;
      const tag = line.slice(start + 1, end);
      const before = start === 0 ? ' ' : line[start - 1];
      const after = end + 1 >= line.length ? ' ' : line[end + 1];
      if (
        tag.length > 0 &&
        !/[ \t|]/.test(tag) &&
        (before === ' ' || before === '\t') &&
        ' \t\r'.includes(after)
      ) {
        entries.push(`${tag}\t${file}`);
        start = line.indexOf('*', end + 1);
      } else {
        start = end;
      }
    }
  }
  return entries;
}

/** The content of `dir/tags` for the `*.txt` help files in `dir`. */
export function helptagsText(dir) {
  const files = readdirSync(dir)
    .filter((name) => name.endsWith('.txt'))
    .sort();
  let utf8 = false;
  const entries = [];
  for (const file of files) {
    const text = readFileSync(join(dir, file), 'utf8');
    // NOTE: Neovim looks at the first line only to decide the file's encoding.
    const first = text.split('\n', 1)[0] ?? '';
    if ([...first].some((char) => char.charCodeAt(0) > 0x7f)) utf8 = true;
    entries.push(...tagsOf(text, file));
  }
  entries.sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
  for (let i = 1; i < entries.length; i++) {
    const tag = entries[i].split('\t')[0];
    if (tag === entries[i - 1].split('\t')[0]) {
      throw new Error(`E154: Duplicate tag "${tag}" in ${entries[i].split('\t')[1]}`);
    }
  }
  const lines = entries.map((entry) => {
    const tag = entry.split('\t')[0];
    return `${entry}\t/*${tag.replace(/[\\/]/g, '\\$&')}*`;
  });
  return (utf8 ? ['!_TAG_FILE_ENCODING\tutf-8\t//', ...lines] : lines).join('\n') + '\n';
}

/** Write `dir/tags` (through a rename, so that a reader never sees half a file). */
export function writeHelptags(dir) {
  const text = helptagsText(dir);
  const temporary = join(dir, `.tags-${process.pid}`);
  writeFileSync(temporary, text);
  renameSync(temporary, join(dir, 'tags'));
  return text.split('\n').length - 1;
}
