// `npm run demo`: opens Neovim (the real terminal UI) on a demo chat with Flemma loaded from this
// checkout. With a provider key in the environment it talks to that provider; without one it
// uses the offline, scripted `demo` provider. It sets up what it needs first (dependencies, the
// build, a Neovim >= 0.10 when none is on PATH).
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureBuild, ensureDependencies, root } from './prepare.mjs';
import { LANES, nvimVersion, resolveLane } from './nvim.mjs';

ensureDependencies();
ensureBuild();

function pathNvim() {
  try {
    const bin = execFileSync('sh', ['-c', 'command -v nvim'], { encoding: 'utf8' }).trim();
    const version = bin ? nvimVersion(bin) : undefined;
    if (version && Number(version.split('.')[0]) === 0 && Number(version.split('.')[1]) < 10)
      return undefined;
    return version ? bin : undefined;
  } catch {
    return undefined;
  }
}

const latest = LANES.find((lane) => lane.name === 'latest');
const nvim =
  process.env.FLEMMA_DEMO_NVIM ?? pathNvim() ?? resolveLane(latest, { install: true })?.bin;
if (!nvim) {
  console.error('demo: no Neovim >= 0.10 found and none could be installed');
  process.exit(1);
}

const provider = process.env.ANTHROPIC_API_KEY
  ? 'anthropic'
  : process.env.OPENAI_API_KEY
    ? 'openai'
    : process.env.GEMINI_API_KEY || process.env.GOOGLE_API_KEY
      ? 'gemini'
      : 'demo';

const workspace = mkdtempSync(join(tmpdir(), 'flemma-demo-'));
mkdirSync(workspace, { recursive: true });
const chat = join(workspace, 'demo.chat');
copyFileSync(join(root, 'scripts/demo/demo.chat'), chat);
// The demo's log stays with its chat, apart from the log of the user's own Flemma.
const log = join(workspace, 'flemma.log');
console.log(
  `Flemma demo with ${provider === 'demo' ? 'the offline demo provider' : provider}; the chat is ${chat}, its log ${log}`,
);

// `-n`: no swap file (it would go to the user's own state directory).
const result = spawnSync(nvim, ['--clean', '-n', '-u', join(root, 'scripts/demo/init.lua'), chat], {
  stdio: 'inherit',
  cwd: workspace,
  env: {
    ...process.env,
    FLEMMA_ROOT: root,
    FLEMMA_DEMO_PROVIDER: provider,
    FLEMMA_DEMO_LOG: log,
  },
});
process.exit(result.status ?? 0);
