// `npm run screenshots`: the README's screenshots, taken from the real plugin in a real terminal.
// It starts the test suite's fake Anthropic server, runs Neovim (this checkout's Flemma, a
// colorscheme that ships with Neovim) in a tmux server of its own at a fixed size, types like a
// user with `tmux send-keys`, waits for what must be on the screen, captures the pane with its
// colours and writes each capture as an SVG into docs/screenshots/. See docs/screenshots.md.
import { execFile, execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { build } from 'esbuild';
import { ensureBuild, ensureDependencies, root } from './prepare.mjs';
import { LANES, nvimVersion, resolveLane } from './nvim.mjs';
import { ansiToSvg } from './screenshots/ansi-svg.mjs';

const COLUMNS = 110;
const ROWS = 32;
/** A colorscheme that ships with Neovim; its `Normal` colours stand for the terminal's own. */
const COLORSCHEME = 'habamax';
const OUT = join(root, 'docs/screenshots');
const WAIT_MS = 15_000;
/** The streaming screenshot is taken with this many pieces of the first reply on screen. */
const SHOT_AT = 4;

const run = promisify(execFile);
const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function fail(message) {
  console.error(`screenshots: ${message}`);
  process.exit(1);
}

// --- What it needs -----------------------------------------------------------------------------

function findTmux() {
  let version;
  try {
    version = execFileSync('tmux', ['-V'], { encoding: 'utf8' }).trim();
  } catch {
    return fail('tmux is not installed or not on PATH (Debian/Ubuntu: apt-get install tmux)');
  }
  // 3.0 brought what the script uses: the size of a detached session, a command given as argv.
  const major = Number(/(\d+)\.\d+/.exec(version)?.[1] ?? 0);
  if (major < 3) fail(`${version} is too old: tmux 3.0 or newer is needed`);
  return version;
}

/** The pictures show the defaults, where `bash` runs in the bubblewrap sandbox without asking. */
function findBwrap() {
  try {
    return execFileSync('bwrap', ['--version'], { encoding: 'utf8' }).trim();
  } catch {
    return fail(
      'bubblewrap (bwrap) is not installed or not on PATH (Debian/Ubuntu: apt-get install bubblewrap): ' +
        'the pictures show the default, where bash runs in the sandbox without asking',
    );
  }
}

function findNvim() {
  const explicit = process.env.FLEMMA_SCREENSHOT_NVIM;
  const latest = LANES.find((lane) => lane.name === 'latest');
  const bin = explicit ?? resolveLane(latest)?.bin;
  const version = bin ? nvimVersion(bin) : undefined;
  if (!bin || !version)
    return fail(
      explicit
        ? `FLEMMA_SCREENSHOT_NVIM=${explicit} is not a working nvim`
        : 'no Neovim found: run `npm run nvim:install`, or set FLEMMA_SCREENSHOT_NVIM=/path/to/nvim',
    );
  const [major, minor] = version.split('.').map(Number);
  if (major === 0 && minor < 10) fail(`${bin} is Neovim ${version}; Flemma needs 0.10 or newer`);
  return { bin, version };
}

/** The colorscheme's `Normal` colours, `#rrggbb`, asked from Neovim itself. */
function normalColours(bin) {
  const lua = `local hl = vim.api.nvim_get_hl(0, { name = "Normal", link = false })
    io.stdout:write(string.format("#%06x #%06x", hl.fg or 0xc0c0c0, hl.bg or 0x000000))`;
  const out = execFileSync(
    bin,
    ['--clean', '--headless', '-c', `colorscheme ${COLORSCHEME}`, '-c', `lua ${lua}`, '-c', 'qa!'],
    { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const [foreground, background] = out.trim().split(' ');
  if (!/^#[0-9a-f]{6}$/.test(foreground ?? '') || !/^#[0-9a-f]{6}$/.test(background ?? ''))
    throw new Error(`could not read the Normal colours of ${COLORSCHEME} (got "${out}")`);
  return { foreground, background };
}

/** The test suite's fake provider (TypeScript), bundled for this script by esbuild. */
async function loadFakeProvider(dir) {
  const outfile = join(dir, 'fake-provider.mjs');
  await build({
    entryPoints: [join(root, 'test/helpers/fake-provider.ts')],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    logLevel: 'error',
  });
  return import(pathToFileURL(outfile).href);
}

// --- The terminal ------------------------------------------------------------------------------

/** A tmux server on a private socket with one pane of COLUMNS × ROWS. */
async function startTmux(dir, command, env) {
  const socket = `flemma-shots-${String(process.pid)}`;
  const conf = join(dir, 'tmux.conf');
  writeFileSync(
    conf,
    [
      'set -g status off',
      'set -g default-terminal tmux-256color',
      'set -s escape-time 10',
      'set -g remain-on-exit on',
      '',
    ].join('\n'),
  );
  const tmux = (...args) =>
    run('tmux', ['-L', socket, ...args], { env, encoding: 'utf8' }).then((r) => r.stdout);
  await tmux('-f', conf, 'new-session', '-d', '-x', `${COLUMNS}`, '-y', `${ROWS}`, ...command);
  const pane = {
    /** Presses keys: tmux key names (`C-]`, `M-Enter`, `Escape`) or, with `literal`, text. */
    keys: (keys, literal = false) =>
      tmux('send-keys', ...(literal ? ['-l', keys] : [keys])).then(() => undefined),
    text: () => tmux('capture-pane', '-p'),
    ansi: () => tmux('capture-pane', '-p', '-e', '-N'),
    cursor: async () => {
      const [x, y, shown] = (
        await tmux('display-message', '-p', '#{cursor_x} #{cursor_y} #{cursor_flag}')
      )
        .trim()
        .split(' ')
        .map(Number);
      return shown === 1 ? { x, y } : undefined;
    },
    dead: async () => (await tmux('display-message', '-p', '#{pane_dead}')).trim() === '1',
    /** Quits Neovim (so that it finishes writing its files), then stops the tmux server. */
    close: async () => {
      const socketPath = (await tmux('display-message', '-p', '#{socket_path}')).trim();
      await tmux('send-keys', 'Escape', ':qa!', 'Enter');
      const deadline = Date.now() + 5000;
      while (!(await pane.dead()) && Date.now() < deadline) await pause(50);
      await tmux('kill-server');
      // NOTE: tmux 3.3 leaves its socket file behind.
      rmSync(socketPath, { force: true });
    },
  };
  return pane;
}

/** Polls the screen until `test` accepts it; fails after WAIT_MS, showing what was on it. */
async function waitForScreen(pane, what, test) {
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    const screen = await pane.text();
    if (test(screen)) return screen;
    if (await pane.dead()) throw new Error(`Neovim exited while waiting for ${what}:\n${screen}`);
    if (Date.now() > deadline)
      throw new Error(`no ${what} after ${String(WAIT_MS)} ms; the screen was:\n${screen}`);
    await pause(50);
  }
}

/** The last row of the screen: Neovim's command line. */
function cmdline(screen) {
  return (screen.split('\n')[ROWS - 1] ?? '').trim();
}

async function shoot(pane, colours, name, title) {
  const svg = ansiToSvg(await pane.ansi(), {
    columns: COLUMNS,
    rows: ROWS,
    ...colours,
    title,
    cursor: await pane.cursor(),
  });
  const path = join(OUT, `${name}.svg`);
  writeFileSync(path, svg);
  console.log(`screenshots: wrote ${path.slice(root.length + 1)}`);
}

/** The screen's text with line breaks and number columns folded away, to find wrapped text. */
function flat(screen) {
  // A row starts with its line number (none on a wrapped row's continuation), then the turn
  // gutter's mark.
  return screen.replace(/\s*\n\s*(\d+)?\s?[╭│╰┊╯]?\s*/gu, ' ').replace(/\s+/g, ' ');
}

/** The spinner frame of the progress indicator, or undefined when none shows. */
function spinnerFrame(screen) {
  return /@Assistant:\s+(\S) /.exec(screen)?.[1];
}

/**
 * The host updates the progress label on a stream event at most every 100 ms, so a label drawn
 * when a stream stalls may not count the last piece. Before the piece that precedes the
 * screenshot, wait until `previous` is on screen (the host has handled it) and the spinner, which
 * Neovim advances every 100 ms, has moved three times: the next piece then updates the label.
 */
async function letProgressCatchUp(pane, previous) {
  let frame = spinnerFrame(
    await waitForScreen(pane, 'the reply so far', (s) => flat(s).includes(flat(previous).trim())),
  );
  for (let tick = 0; tick < 3; tick++) {
    const before = frame;
    frame = spinnerFrame(
      await waitForScreen(pane, 'the spinner to move', (s) => spinnerFrame(s) !== before),
    );
  }
}

// --- The conversation --------------------------------------------------------------------------

const CHAT = [
  '@System:',
  'You are a careful pair programmer. Keep answers short.',
  '',
  '@You:',
  'Which TODOs are left in src/? Group them by file.',
  '',
];

const SOURCES = {
  'src/parser.ts': [
    'export function parse(text: string): string[] {',
    '  // TODO: keep the line endings of the input',
    "  return text.split('\\n');",
    '}',
    '',
  ],
  'src/render.ts': [
    'export function render(lines: string[]): string {',
    '  // TODO: wrap long lines at the text width',
    "  return lines.join('\\n'); // TODO: trailing newline?",
    '}',
    '',
  ],
};

const FIRST_REPLY = [
  'I will search the sources for TODO markers, then group what I find by file. ',
  'A plain `grep` over `src/` is enough here: ',
  'the project is small, and the markers are all written the same way, ',
  'as `// TODO:` comments at the end of a line or on a line of their own. ',
  'Once I have the list I will sort it by file and line, ',
  'so that you can go through it from top to bottom.',
];

const FINAL_REPLY = [
  'Three TODOs are left, in two files:\n\n',
  '- `src/parser.ts`\n',
  '  - line 2: keep the line endings of the input\n',
  '- `src/render.ts`\n',
  '  - line 2: wrap long lines at the text width\n',
  '  - line 3: decide whether the output ends with a newline\n\n',
  'The two in `render.ts` touch the same function; I would do them together.',
];

/** One Anthropic Messages stream: text pieces, then an optional tool call. `beforePiece(i)` may
 * hold the stream before piece `i` is sent. */
async function reply(request, { pieces, call, tokens, beforePiece }) {
  const s = request.stream();
  await s.sse('message_start', {
    type: 'message_start',
    message: {
      id: 'msg_screenshot',
      type: 'message',
      role: 'assistant',
      model: 'claude-sonnet-4-6',
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: {
        input_tokens: tokens.input,
        output_tokens: 1,
        cache_read_input_tokens: tokens.cacheRead,
        cache_creation_input_tokens: tokens.cacheCreation,
      },
    },
  });
  await s.sse('content_block_start', {
    type: 'content_block_start',
    index: 0,
    content_block: { type: 'text', text: '' },
  });
  for (const [i, text] of pieces.entries()) {
    await beforePiece?.(i);
    await s.sse('content_block_delta', {
      type: 'content_block_delta',
      index: 0,
      delta: { type: 'text_delta', text },
    });
  }
  await s.sse('content_block_stop', { type: 'content_block_stop', index: 0 });
  if (call) {
    await s.sse('content_block_start', {
      type: 'content_block_start',
      index: 1,
      content_block: { type: 'tool_use', id: call.id, name: call.name, input: {} },
    });
    await s.sse('content_block_delta', {
      type: 'content_block_delta',
      index: 1,
      delta: { type: 'input_json_delta', partial_json: JSON.stringify(call.input) },
    });
    await s.sse('content_block_stop', { type: 'content_block_stop', index: 1 });
  }
  await s.sse('message_delta', {
    type: 'message_delta',
    delta: { stop_reason: call ? 'tool_use' : 'end_turn', stop_sequence: null },
    usage: { output_tokens: tokens.output },
  });
  await s.sse('message_stop', { type: 'message_stop' });
  await s.end();
}

/** The environment of tmux and everything in it: a private home, the fake server's address. */
function environment(dir, fakeUrl) {
  const env = { ...process.env };
  for (const name of Object.keys(env))
    if (/^(ANTHROPIC|OPENAI|GEMINI|GOOGLE|VERTEX|MOONSHOT)_|^(NVIM|TMUX|NODE_OPTIONS)/.test(name))
      delete env[name];
  const home = join(dir, 'home');
  for (const sub of ['config', 'data', 'state', 'cache'])
    mkdirSync(join(home, sub), { recursive: true });
  return {
    ...env,
    HOME: home,
    XDG_CONFIG_HOME: join(home, 'config'),
    XDG_DATA_HOME: join(home, 'data'),
    XDG_STATE_HOME: join(home, 'state'),
    XDG_CACHE_HOME: join(home, 'cache'),
    COLORTERM: 'truecolor',
    FLEMMA_ROOT: root,
    FLEMMA_SHOTS_COLORSCHEME: COLORSCHEME,
    ANTHROPIC_API_KEY: 'sk-screenshots',
    ANTHROPIC_BASE_URL: fakeUrl,
  };
}

async function main() {
  const tmuxVersion = findTmux();
  const bwrapVersion = findBwrap();
  const nvim = findNvim();
  const colours = normalColours(nvim.bin);
  ensureDependencies();
  ensureBuild();
  const started = Date.now();
  const dir = mkdtempSync(join(tmpdir(), 'flemma-shots-'));
  const work = join(dir, 'project');
  for (const [path, lines] of Object.entries(SOURCES)) {
    mkdirSync(join(work, path, '..'), { recursive: true });
    writeFileSync(join(work, path), lines.join('\n'));
  }
  writeFileSync(join(work, 'todos.chat'), CHAT.join('\n'));
  mkdirSync(OUT, { recursive: true });
  console.log(`screenshots: ${tmuxVersion}, ${bwrapVersion}, Neovim ${nvim.version} (${nvim.bin})`);

  const { startFakeProvider } = await loadFakeProvider(dir);
  const fake = await startFakeProvider();
  const env = environment(dir, fake.url);
  const nvimArgs = [
    '--clean',
    '-n',
    '-i',
    'NONE',
    '-u',
    join(root, 'scripts/screenshots/init.lua'),
  ];
  const pane = await startTmux(dir, ['-c', work, '--', nvim.bin, ...nvimArgs, 'todos.chat'], env);
  const cleanup = async () => {
    await pane.close().catch((error) => {
      console.error(
        `screenshots: stopping tmux: ${error instanceof Error ? error.message : String(error)}`,
      );
    });
    await fake.close();
    rmSync(dir, { recursive: true, force: true });
  };
  process.once('SIGINT', () => {
    void cleanup().then(() => process.exit(130));
  });

  try {
    await waitForScreen(pane, 'chat buffer', (s) => s.includes('Group them by file.'));

    // 1. A reply streaming in, with the progress indicator on its `@Assistant:` line.
    await pane.keys('G');
    await pane.keys('C-]');
    const first = await fake.nextRequest({ path: '/v1/messages', timeout: WAIT_MS });
    await reply(first, {
      pieces: FIRST_REPLY,
      call: {
        id: 'toolu_01',
        name: 'bash',
        input: { label: 'find TODO markers', command: 'grep -rn TODO src | sort', timeout: null },
      },
      tokens: { input: 1240, output: 96, cacheRead: 0, cacheCreation: 0 },
      beforePiece: async (i) => {
        if (i === SHOT_AT - 1) await letProgressCatchUp(pane, FIRST_REPLY[i - 1] ?? '');
        if (i !== SHOT_AT) return;
        const shown = FIRST_REPLY.slice(0, SHOT_AT);
        const label = `${String(shown.join('').length)} characters · `;
        await waitForScreen(
          pane,
          `the streaming reply with "${label}"`,
          (s) => s.includes(label) && flat(s).includes(flat(shown.at(-1) ?? '').trim()),
        );
        await shoot(
          pane,
          colours,
          'streaming',
          'A reply streaming into a .chat buffer, with its progress indicator',
        );
      },
    });

    // 2. The default: the sandbox resolver approved the bash call, it ran inside bubblewrap and
    // its result is under it; autopilot sends the result (the server holds that request).
    const second = await fake.nextRequest({ path: '/v1/messages', timeout: WAIT_MS });
    await waitForScreen(pane, 'the tool result', (s) => s.includes('Tool Result'));
    await shoot(
      pane,
      colours,
      'bash-sandboxed',
      'A bash tool call that ran in the sandbox without asking, its result folded under it',
    );

    // 3. The final reply streams in; the usage bar follows.
    await reply(second, {
      pieces: FINAL_REPLY,
      tokens: { input: 180, output: 142, cacheRead: 1240, cacheCreation: 96 },
    });
    await waitForScreen(pane, 'the usage bar', (s) => s.includes('Σ2'));
    // As a user would: go to the end of the reply, and clear the old message with `:` <Esc>.
    await pane.keys('G');
    await pane.keys(':', true);
    await pane.keys('Escape');
    await waitForScreen(
      pane,
      'the end of the reply',
      (s) => s.includes('I would do them together.') && cmdline(s) === '',
    );
    await shoot(
      pane,
      colours,
      'usage',
      'The usage bar after a reply: model, cost, cache share, tokens and the session total',
    );

    // 4. A change reviewed before it lands: the next reply proposes an edit of src/render.ts,
    // which waits for approval (its preview counts the lines), and :Flemma tool:diff shows the
    // file beside what the call would leave.
    // By default the sandbox lets an edit inside the project run without asking; here the
    // user wants to review edits first, as a careful user would set it.
    await pane.keys(
      ':lua require("flemma").setup({ ui = { usage = { timeout = 0 } }, tools = { auto_approve = { "read" } } })',
      true,
    );
    await pane.keys('Enter');
    await pane.keys('A');
    await pane.keys('Do both TODOs in render.ts.', true);
    await pane.keys('Escape');
    await pane.keys('C-]');
    const third = await fake.nextRequest({ path: '/v1/messages', timeout: WAIT_MS });
    await reply(third, {
      pieces: ['One edit covers both: wrap at the width, and end with a newline.'],
      call: {
        id: 'toolu_02',
        name: 'edit',
        input: {
          label: 'wrap lines, end with a newline',
          path: 'src/render.ts',
          oldText: [
            '  // TODO: wrap long lines at the text width',
            "  return lines.join('\\n'); // TODO: trailing newline?",
          ].join('\n'),
          newText: [
            '  const wrapped = lines.flatMap((line) => wrap(line, width));',
            "  return wrapped.join('\\n') + '\\n';",
          ].join('\n'),
        },
      },
      tokens: { input: 420, output: 88, cacheRead: 1336, cacheCreation: 0 },
    });
    await waitForScreen(pane, 'the pending edit with its line counts', (s) =>
      /src\/render\.ts\s+\+2 −2/u.test(s),
    );
    await pane.keys('/status=pending', true);
    await pane.keys('Enter');
    await pane.keys(':Flemma tool:diff', true);
    await pane.keys('Enter');
    await waitForScreen(
      pane,
      'the diff of the edit',
      (s) => s.includes('wrapped.join') && s.includes('TODO: wrap long lines'),
    );
    await pane.keys(':', true);
    await pane.keys('Escape');
    await waitForScreen(pane, 'a clear command line', (s) => cmdline(s) === '');
    await shoot(
      pane,
      colours,
      'diff-review',
      'A pending edit in diff mode: the file as it is, beside what the call would leave',
    );
  } finally {
    await cleanup();
  }
  console.log(`screenshots: done in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

main().catch((error) => {
  console.error(`screenshots: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
