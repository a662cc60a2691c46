import { describe, expect, it } from 'vitest';
import { AcquireRequest, Target } from './wire.js';

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

// The schema lets through what canonicalTarget takes: a bare IPv6 address may end in "::", and a name start
// with "_" (the gateway's CONNECT takes both); a 400 for them was a site crawlers could not ask about.
describe('Target', () => {
  it.each([
    ['2001:db8::', '[2001:db8::]'],
    ['fe80::', '[fe80::]'],
    ['_acme.example:443', '_acme.example:443'],
    ['Shop.Example.', 'shop.example'],
  ])('takes %j as %j', (text, canonical) => {
    expect(Target.parse(text)).toBe(canonical);
  });

  it.each(['shop.example:', 'a b', '-x.example', 'x_.example:0'])('refuses %j', (text) => {
    expect(Target.safeParse(text).success).toBe(false);
  });
});
