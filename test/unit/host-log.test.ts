// The host's file logger (src/host/log.ts): a deferred line (the start's) is written before the
// next line or when flushed, with the time it was logged, redacted like every line.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createFileLogger } from '../../src/host/log.js';
import { REDACTED } from '../../src/core/secrets/redact.js';

const dirs: string[] = [];

function logFile(): string {
  const dir = mkdtempSync(join(tmpdir(), 'flemma-log-'));
  dirs.push(dir);
  return join(dir, 'flemma.log');
}

function lines(path: string): string[] {
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((line) => line !== '');
}

afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe('the host log', () => {
  it('writes a deferred line only when flushed, once, with the time it was logged', () => {
    const path = logFile();
    const logger = createFileLogger(path, 'info');
    const before = Date.now();
    logger.defer('info', 'host started');
    expect(readFileSync(path, 'utf8')).toBe('');
    logger.flushDeferred();
    logger.flushDeferred();
    const written = lines(path);
    expect(written).toHaveLength(1);
    expect(written[0]).toMatch(/ \[host \d+\] INFO host started$/);
    const at = Date.parse(written[0]?.split(' ')[0] ?? '');
    expect(at).toBeGreaterThanOrEqual(before - 1);
  });

  it('writes a deferred line before the next line, in order, and leaves out one below the level', () => {
    const path = logFile();
    const logger = createFileLogger(path, 'info');
    logger.defer('info', 'first');
    logger.defer('debug', 'not logged at info');
    logger.warn('second');
    logger.flushDeferred();
    expect(lines(path).map((line) => line.replace(/^\S+ \[host \d+\] /, ''))).toEqual([
      'INFO first',
      'WARN second',
    ]);
  });

  it('redacts a deferred line and knows the secrets of the environment by its first line', () => {
    const path = logFile();
    const previous = process.env['FLEMMA_TEST_LOG_TOKEN'];
    process.env['FLEMMA_TEST_LOG_TOKEN'] = 'opaque-value-for-the-log-1234';
    try {
      const logger = createFileLogger(path, 'info');
      logger.defer(
        'info',
        'token opaque-value-for-the-log-1234 and sk-ant-api03-abcdefghijklmnopqrstuvwx',
      );
      logger.flushDeferred();
      expect(lines(path)[0]?.endsWith(`INFO token ${REDACTED} and ${REDACTED}`)).toBe(true);
      expect(logger.redactor.known()).toContain('opaque-value-for-the-log-1234');
    } finally {
      if (previous === undefined) delete process.env['FLEMMA_TEST_LOG_TOKEN'];
      else process.env['FLEMMA_TEST_LOG_TOKEN'] = previous;
    }
  });
});
