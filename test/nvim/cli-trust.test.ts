// `flemma run` decides trust as Neovim does, from the files Neovim and Flemma write: a chat
// `:trust`ed in Neovim is trusted by the CLI (its frontmatter's endpoint used); once its
// frontmatter changes outside Neovim it is not (the configured endpoint used, and said).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { anthropicReply } from '../helpers/anthropic-script.js';
import { flemma } from '../helpers/cli.js';
import { homeEnv } from '../helpers/driver.js';
import { launcher } from '../helpers/e2e.js';
import { type FakeProvider, startFakeProvider } from '../helpers/fake-provider.js';

const endpoints: FakeProvider[] = [];
const launch = launcher();

afterEach(async () => {
  for (const fake of endpoints.splice(0)) await fake.close();
});

const chat = (url: string, question: string): string[] => [
  '```json',
  JSON.stringify({ flemma: { parameters: { anthropic: { base_url: url } } } }),
  '```',
  '@You:',
  question,
];

describe('flemma run and the trust given in Neovim', () => {
  it('trusts a chat :trust trusted, and not once its frontmatter changed outside Neovim', async () => {
    const endpoint = await startFakeProvider();
    endpoints.push(endpoint);
    const { d, f } = await launch({ key: 'sk-ant-test-key', setup: 'require("flemma").setup({})' });
    await d.openChat('job.chat', chat(endpoint.url, 'Hello?'));
    await d.command('trust');
    const home = {
      dir: join(d.home, 'work'),
      env: {
        ...homeEnv(d.home),
        PATH: process.env['PATH'] ?? '/usr/bin:/bin',
        ANTHROPIC_API_KEY: 'sk-ant-test-key',
        ANTHROPIC_BASE_URL: f.url,
      },
    };
    const trusted = flemma(home, ['run', 'job.chat']);
    await anthropicReply(await endpoint.nextRequest(), 'From the file’s endpoint.');
    expect((await trusted).exitCode).toBe(0);

    // Changed outside Neovim (as a pull would): the frontmatter is no longer what was trusted.
    const moved = await startFakeProvider();
    endpoints.push(moved);
    writeFileSync(join(home.dir, 'job.chat'), `${chat(moved.url, 'And now?').join('\n')}\n`);
    const changed = flemma(home, ['run', 'job.chat']);
    await anthropicReply(await f.nextRequest(), 'From the configured endpoint.');
    const result = await changed;
    expect(result.exitCode).toBe(0);
    expect(result.stderr).toContain('job.chat is changed since it was trusted in Neovim');
    expect(moved.requests).toEqual([]);
  });
});
