import { describe, expect, it } from 'vitest';
import { intToIp, ipToInt, LoopbackPool, randomStart } from './address-pool.js';

describe('LoopbackPool', () => {
  it('hands out fresh addresses first, skipping .0, .255 and 127.0.0.1', () => {
    const pool = new LoopbackPool({ first: '127.0.0.253', last: '127.0.1.2' });
    expect([pool.allocate(), pool.allocate(), pool.allocate(), pool.allocate()]).toEqual([
      '127.0.0.253',
      '127.0.0.254',
      '127.0.1.1',
      '127.0.1.2',
    ]);
    expect(pool.allocate()).toBeNull();
    expect(new LoopbackPool({ first: '127.0.0.1', last: '127.0.0.2' }).allocate()).toBe('127.0.0.2');
  });

  it('reuses freed addresses last, oldest first, never twice at once', () => {
    const pool = new LoopbackPool({ first: '127.0.0.2', last: '127.0.0.5' });
    const a = pool.allocate()!;
    const b = pool.allocate()!;
    pool.release(b);
    pool.release(a);
    pool.release(a);
    expect(pool.allocate()).toBe('127.0.0.4');
    expect(pool.allocate()).toBe('127.0.0.5');
    expect(pool.allocate()).toBe(b);
    expect(pool.allocate()).toBe(a);
    expect(pool.allocate()).toBeNull();
    expect(pool.inUseCount).toBe(4);
  });

  it('starts the fresh walk at startAt and wraps to the first address before reusing freed ones', () => {
    const pool = new LoopbackPool({ first: '127.0.0.2', last: '127.0.0.5' }, '127.0.0.4');
    const got = [pool.allocate(), pool.allocate(), pool.allocate()];
    expect(got).toEqual(['127.0.0.4', '127.0.0.5', '127.0.0.2']);
    pool.release('127.0.0.5');
    expect(pool.allocate()).toBe('127.0.0.3');
    expect(pool.allocate()).toBe('127.0.0.5');
    expect(pool.allocate()).toBeNull();
    expect(() => new LoopbackPool({ first: '127.0.0.2', last: '127.0.0.5' }, '127.0.0.9')).toThrow();
  });

  it.each([
    [0, '127.0.0.2'],
    [0.5, '127.0.128.0'],
    [0.999_999_99, '127.0.255.254'],
  ])('randomStart(%s) picks an address of the range', (r, ip) => {
    expect(randomStart(() => r)).toBe(ip);
  });

  it('rejects ranges outside 127/8', () => {
    expect(() => new LoopbackPool({ first: '10.0.0.1', last: '10.0.0.9' })).toThrow();
  });

  it.each(['127.0.0.2', '127.1.2.3', '127.255.255.254'])('round-trips %s', (ip) => {
    expect(intToIp(ipToInt(ip))).toBe(ip);
  });
});
