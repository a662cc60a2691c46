import { describe, expect, it } from 'vitest';
import { retryAfterMs } from './retry-after.js';

describe('retryAfterMs', () => {
  const now = Date.parse('2026-12-02T12:00:00Z');
  it.each<[string | null, number | undefined]>([
    ['3', 3000],
    ['0', 0],
    ['Wed, 02 Dec 2026 12:00:04 GMT', 4000],
    ['Wed, 02 Dec 2026 11:59:00 GMT', 0], // a date past: at once
    [null, undefined],
    ['', undefined],
    ['soon', undefined],
  ])('%j → %j', (header, ms) => {
    expect(retryAfterMs(header, now)).toBe(ms);
  });
});
