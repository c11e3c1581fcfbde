// The one redactor (src/core/secrets/redact.ts): known values, key-shaped strings, Bearer values
// and values after secret-looking names; what it must leave alone; the credential chain's
// variable names all count as secret. The Lua side is compared with it on the same corpus in
// test/nvim/redact.test.ts.
import { describe, expect, it } from 'vitest';
import { REDACTED, Redactor, isSecretName } from '../../src/core/secrets/redact.js';
import { environmentVariables } from '../../src/core/secrets/chain.js';
import { PROVIDERS } from '../../src/host/providers.js';
import { REDACTION_CORPUS } from '../helpers/redaction-corpus.js';

describe('the redactor', () => {
  it('replaces every key-shaped string of the corpus and keeps the rest', () => {
    const redactor = new Redactor();
    for (const { text, redacted } of REDACTION_CORPUS) {
      expect(redactor.text(text), text).toBe(redacted);
    }
  });

  it('replaces known values, longest first, also in their JSON-escaped form', () => {
    const redactor = new Redactor();
    expect(redactor.add('short')).toBe(false);
    expect(redactor.add('plain-secret-value')).toBe(true);
    expect(redactor.add('plain-secret-value-longer')).toBe(true);
    expect(redactor.add('with "quotes" inside')).toBe(true);
    expect(redactor.text('a plain-secret-value-longer b plain-secret-value c')).toBe(
      `a ${REDACTED} b ${REDACTED} c`,
    );
    expect(redactor.text(JSON.stringify({ note: 'say with "quotes" inside' }))).toBe(
      `{"note":"say ${REDACTED}"}`,
    );
    expect(redactor.text('the word short stays')).toBe('the word short stays');
  });

  it('learns the secret-looking variables of an environment and nothing else', () => {
    const redactor = new Redactor();
    let changes = 0;
    redactor.onChange(() => (changes += 1));
    redactor.addEnvironment({
      MY_SERVICE_TOKEN: 'opaque-value-1234',
      DB_PASSWORD: 'correct horse battery',
      HOME: '/home/someone/projects',
      SHORT_KEY: 'abc',
    });
    expect(changes).toBe(2);
    expect(redactor.text('opaque-value-1234 /home/someone/projects correct horse battery')).toBe(
      `${REDACTED} /home/someone/projects ${REDACTED}`,
    );
  });

  it('learns an environment given for its first use when it is first used, before anything is redacted', () => {
    const redactor = new Redactor();
    let changes = 0;
    redactor.onChange(() => (changes += 1));
    redactor.addEnvironmentOnFirstUse({ MY_SERVICE_TOKEN: 'opaque-value-1234', HOME: '/home/x' });
    expect(changes).toBe(0);
    expect(redactor.text('token opaque-value-1234 in /home/x')).toBe(
      `token ${REDACTED} in /home/x`,
    );
    expect(changes).toBe(1);
    const other = new Redactor();
    other.addEnvironmentOnFirstUse({ DB_PASSWORD: 'correct horse battery' });
    expect(other.known()).toContain('correct horse battery');
    const third = new Redactor();
    third.addEnvironmentOnFirstUse({ API_TOKEN: 'first-value-5678' });
    expect(third.add('second-value-9012')).toBe(true);
    expect(third.known()).toEqual(
      expect.arrayContaining(['first-value-5678', 'second-value-9012']),
    );
  });

  it('redacts structured values by key name, the extra names and every string', () => {
    const redactor = new Redactor();
    redactor.add('known-secret-value');
    expect(
      redactor.value(
        {
          url: 'https://x',
          api_key: 'k-1',
          headers: { Authorization: 'Bearer t', Accept: 'text/plain' },
          session: 'abc',
          nested: [{ password: 1 }, 'echo known-secret-value'],
          max_tokens: 64,
        },
        ['session'],
      ),
    ).toEqual({
      url: 'https://x',
      api_key: REDACTED,
      headers: { Authorization: REDACTED, Accept: 'text/plain' },
      session: REDACTED,
      nested: [{ password: REDACTED }, `echo ${REDACTED}`],
      max_tokens: 64,
    });
  });

  it('counts every variable the credential chain reads as secret', () => {
    const names = Object.values(PROVIDERS).flatMap((entry) => {
      const credential = entry.credential({});
      return credential === undefined ? [] : environmentVariables(credential);
    });
    expect(names).toContain('ANTHROPIC_API_KEY');
    for (const name of [...names, 'VERTEX_SERVICE_ACCOUNT']) {
      expect(isSecretName(name), name).toBe(true);
    }
    for (const name of ['ANTHROPIC_BASE_URL', 'HOME', 'PATH', 'max_tokens', 'output_tokens']) {
      expect(isSecretName(name), name).toBe(false);
    }
  });

  it('does not try a name twice: a long run of name characters is read once', () => {
    // A quadratic scan would take minutes on this line; the linear one is instant.
    const line = 'a'.repeat(200_000) + ' x-api-key: sk-ant-api03-abcdefghijklmnop';
    expect(new Redactor().text(line).endsWith(`x-api-key: ${REDACTED}`)).toBe(true);
  });
});
