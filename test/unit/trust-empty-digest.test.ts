// The digest of a tree with nothing that needs trust is written out in src/core/config/trust.ts
// (so that loading the host computes no hash): it must be SHA-256 of nothing.
import { createHash } from 'node:crypto';
import { expect, it } from 'vitest';
import { EMPTY_TRUST_DIGEST } from '../../src/core/config/trust.js';

it('EMPTY_TRUST_DIGEST is the SHA-256 of nothing', () => {
  expect(EMPTY_TRUST_DIGEST).toBe(createHash('sha256').digest('hex'));
});
