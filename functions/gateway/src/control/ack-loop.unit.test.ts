import { describe, expect, it } from 'vitest';
import { type AckBound, isAcked } from './ack-loop.js';
import type { Applied } from './session-settings.js';

const applied = (version: number, ownershipEpoch: number) => ({ version, ownershipEpoch }) as Applied;

describe('isAcked', () => {
  it.each<[string, AckBound | null, boolean]>([
    ['no bound yet', null, false],
    ['the bound is on the applied snapshot', { version: 3, epoch: 2 }, true],
    ['an older version', { version: 2, epoch: 2 }, false],
    ['a newer version (the controller is ahead)', { version: 4, epoch: 2 }, false],
    ['the same version under another epoch', { version: 3, epoch: 1 }, false],
  ])('%s → %s', (_name, bound, expected) => {
    expect(isAcked(bound, applied(3, 2))).toBe(expected);
  });
});
