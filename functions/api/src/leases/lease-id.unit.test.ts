import { describe, expect, it } from 'vitest';
import { newLeaseId } from './service.js';

describe('newLeaseId', () => {
  it('is 128 random bits in hex, so that it never reads as a command-line flag', () => {
    const ids = Array.from({ length: 2000 }, newLeaseId);
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{32}$/);
    expect(new Set(ids).size).toBe(ids.length);
  });
});
