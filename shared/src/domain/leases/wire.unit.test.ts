import { describe, expect, it } from 'vitest';
import { AcquireRequest } from './wire.js';

describe('AcquireRequest.protocols', () => {
  it.each<{ body: Record<string, unknown>; protocols: string[] }>([
    // SOCKS5 is opt-in: crawlers that predate it send nothing and must keep getting http proxies.
    { body: {}, protocols: ['http'] },
    { body: { protocols: ['socks5'] }, protocols: ['socks5'] },
    { body: { protocols: ['socks5', 'http'] }, protocols: ['socks5', 'http'] },
  ])('$body → $protocols', ({ body, protocols }) => {
    expect(AcquireRequest.parse(body).protocols).toEqual(protocols);
  });

  it.each<{ name: string; protocols: unknown; path: PropertyKey[] }>([
    { name: 'empty', protocols: [], path: ['protocols'] },
    { name: 'a duplicate', protocols: ['socks5', 'socks5'], path: ['protocols'] },
    { name: 'an unknown protocol', protocols: ['https'], path: ['protocols', 0] },
    { name: 'a bare string', protocols: 'socks5', path: ['protocols'] },
    { name: 'null', protocols: null, path: ['protocols'] },
  ])('refuses $name', ({ protocols, path }) => {
    const r = AcquireRequest.safeParse({ protocols });
    expect(r.success).toBe(false);
    expect(r.error?.issues.map((i) => i.path)).toContainEqual(path);
  });
});
