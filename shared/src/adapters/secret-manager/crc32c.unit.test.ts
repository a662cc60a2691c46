import { describe, expect, it } from 'vitest';
import { crc32c } from './crc32c.js';

const bytes = (s: string) => new TextEncoder().encode(s);

describe('crc32c', () => {
  it.each([
    ['', 0],
    ['123456789', 0xe3069283], // the standard check value
    ['a', 0xc1d04330],
  ])('crc32c(%j)', (input, expected) => {
    expect(crc32c(bytes(input))).toBe(expected);
  });

  it('matches RFC 3720 B.4: 32 bytes of zeros and of 0xff', () => {
    expect(crc32c(new Uint8Array(32))).toBe(0x8a9136aa);
    expect(crc32c(new Uint8Array(32).fill(0xff))).toBe(0x62a8ab43);
  });
});
