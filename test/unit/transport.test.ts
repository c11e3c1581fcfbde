// What a failed connection is called, from the error Node's fetch gives (`TypeError: fetch
// failed` with the system's error under it), for the failures a test server cannot stage:
// certificates, a connection attempt that never completes, an unreachable network.
import { describe, expect, it } from 'vitest';
import {
  carriedError,
  causeCode,
  connectError,
  endpointOf,
  lostError,
  shownUrl,
} from '../../src/core/provider/transport.js';
import { ProviderError } from '../../src/core/provider/types.js';

/** The shape of undici's rejection: `fetch failed`, the system error as its cause. */
function fetchFailed(code: string, message: string): TypeError {
  return new TypeError('fetch failed', { cause: Object.assign(new Error(message), { code }) });
}

describe('where', () => {
  it('is host:port, the default port spelled out, never the path, query or user', () => {
    expect(endpointOf('https://api.anthropic.com/v1/messages?key=sk-1')).toBe(
      'api.anthropic.com:443',
    );
    expect(endpointOf('http://user:pw@127.0.0.1:8080/v1')).toBe('127.0.0.1:8080');
    expect(endpointOf('http://localhost/x')).toBe('localhost:80');
    expect(endpointOf('http://[::1]:11434/v1')).toBe('[::1]:11434');
    expect(shownUrl('http://user:pw@127.0.0.1:8080/v1/?key=sk-1')).toBe('http://127.0.0.1:8080/v1');
  });
});

describe('a connection that fails', () => {
  it.each([
    [
      'DEPTH_ZERO_SELF_SIGNED_CERT',
      'self-signed certificate',
      "TLS failed: the server's certificate is self-signed, and not trusted",
      false,
    ],
    [
      'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
      'unable to get local issuer certificate',
      "TLS failed: the server's certificate is not signed by an authority this machine trusts (a proxy that inspects TLS? its CA goes in NODE_EXTRA_CA_CERTS)",
      false,
    ],
    [
      'CERT_HAS_EXPIRED',
      'certificate has expired',
      "TLS failed: the server's certificate has expired",
      false,
    ],
    [
      'ERR_TLS_CERT_ALTNAME_INVALID',
      "Hostname/IP does not match certificate's altnames",
      "TLS failed: the server's certificate is for another host name",
      false,
    ],
    [
      'ERR_SSL_SOMETHING_NEW',
      'ssl3_read_bytes:something new',
      'TLS failed: ssl3_read_bytes:something new',
      false,
    ],
    [
      'UND_ERR_CONNECT_TIMEOUT',
      'Connect Timeout Error',
      'could not connect in time: the host did not answer the connection',
      true,
    ],
    ['ENETUNREACH', 'connect ENETUNREACH', 'the network is unreachable', true],
    ['EHOSTUNREACH', 'connect EHOSTUNREACH', 'the host is unreachable', true],
    ['ECONNRESET', 'read ECONNRESET', 'the connection was reset', true],
    ['EWHATEVER', 'something odd', 'could not connect: something odd', true],
  ])('%s says so in plain words', (code, message, said, retryable) => {
    const error = connectError('anthropic', 'api.anthropic.com:443', fetchFailed(code, message));
    expect(error.describe()).toBe(`anthropic (api.anthropic.com:443): ${said}`);
    expect(error.retryable).toBe(retryable);
  });

  it('words a connection timeout so that the SDKs do not take it for their own timeout', () => {
    // The Anthropic and OpenAI SDKs test an error's text for their own timeout this way.
    const error = connectError('openai', 'h:443', fetchFailed('ETIMEDOUT', 'connect ETIMEDOUT'));
    expect(String(error) + String(error.cause)).not.toMatch(/timed? ?out/i);
    expect(error.kind).toBe('timeout');
  });

  it('finds the code among the attempts of an AggregateError (localhost: IPv6 and IPv4)', () => {
    const both = new AggregateError(
      [
        Object.assign(new Error('connect ECONNREFUSED ::1:9'), { code: 'ECONNREFUSED' }),
        Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9'), { code: 'ECONNREFUSED' }),
      ],
      'all failed',
    );
    const error = new TypeError('fetch failed', { cause: both });
    expect(causeCode(error)).toBe('ECONNREFUSED');
    expect(connectError('compatible', 'localhost:9', error).describe()).toBe(
      'compatible (localhost:9): connection refused: nothing is listening there. Is the local server running?',
    );
  });

  it('does not ask about a local server for a remote host', () => {
    const error = connectError(
      'anthropic',
      'api.anthropic.com:443',
      fetchFailed('ECONNREFUSED', 'x'),
    );
    expect(error.message).toBe('connection refused: nothing is listening there');
  });

  it('says a lost connection is retryable only before any byte came', () => {
    const terminated = new TypeError('terminated', {
      cause: Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' }),
    });
    expect(lostError('gemini', 'h:443', terminated, true)).toMatchObject({
      message: 'the connection was lost mid-reply (the server closed it)',
      retryable: false,
    });
    expect(lostError('gemini', 'h:443', terminated, false)).toMatchObject({
      message: 'the connection was lost before the reply began (the server closed it)',
      retryable: true,
    });
  });

  it('finds the explained failure an SDK wraps', () => {
    const explained = connectError('openai', 'h:443', fetchFailed('ECONNREFUSED', 'x'));
    const wrapped = new Error('Connection error.', { cause: explained });
    expect(carriedError(wrapped)).toBe(explained);
    expect(carriedError(new Error('other'))).toBeUndefined();
    expect(explained).toBeInstanceOf(ProviderError);
  });
});
