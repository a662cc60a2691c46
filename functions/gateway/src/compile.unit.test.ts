import { describe, expect, it } from 'vitest';
import { buildSnapshot } from '../../../shared/src/domain/gateway/canonical.js';
import { newLiveCounters } from '../../../shared/src/domain/gateway/routing.js';
import {
  type GatewayProxy,
  GatewaySnapshot,
  sha256Hex,
} from '../../../shared/src/messages/gateway-snapshot.js';
import { compileSnapshot } from './compile.js';
import { CredentialError, refKey, type UpstreamCredentials } from './credentials.js';
import type { PlainHttpSetting } from './plain-http.js';

const T0 = Date.UTC(2026, 0, 1);
const iso = (ms: number) => new Date(ms).toISOString();
const entry = (name: string, extra: Partial<GatewayProxy> = {}): GatewayProxy => ({
  name,
  host: '127.0.0.1',
  port: 1080,
  protocol: 'http',
  capacity: 2,
  expiresAt: iso(T0 + 3_600_000),
  usableUntil: iso(T0 + 3_000_000),
  attributes: {},
  credentialsRef: { secret: name, version: 'latest' },
  ...extra,
});
const snapshot = (proxies: GatewayProxy[]) =>
  GatewaySnapshot.parse(
    buildSnapshot(
      {
        schemaVersion: 1,
        version: 1,
        ownershipEpoch: 1,
        workerId: 'w1',
        generatedAt: iso(T0),
        validUntil: iso(T0 + 600_000),
        routing: [{ name: 'all', match: { hosts: ['*'] }, selector: {}, policy: 'least-active' }],
        proxies,
      },
      sha256Hex,
    ),
  );
const creds = (entries: Record<string, UpstreamCredentials | CredentialError>) =>
  new Map(Object.entries(entries).map(([secret, v]) => [refKey({ secret, version: 'latest' }), v]));
const counters = () => newLiveCounters();
const compile = (
  proxies: GatewayProxy[],
  c: ReturnType<typeof creds>,
  plainHttp: PlainHttpSetting = 'auto',
) => compileSnapshot(snapshot(proxies), c, counters, { plainHttp });

describe('compileSnapshot: the upstream protocol is decided once per snapshot', () => {
  const up = { username: 'u', password: 'p' };

  it('an http entry: Proxy-Authorization pre-computed, no SOCKS5', () => {
    const auth = compile([entry('h')], creds({ h: up })).upstreams.get('h')!.auth;
    expect(auth).toEqual({
      line: `Proxy-Authorization: Basic ${Buffer.from('u:p').toString('base64')}\r\n`,
      authorization: `Basic ${Buffer.from('u:p').toString('base64')}`,
      absoluteUri: false,
      socks5: null,
    });
  });

  it.each<PlainHttpSetting>(['auto', 'pinned', 'absolute-uri'])(
    'a socks5 entry: its credentials for RFC 1929, no HTTP header, never absolute form (GATEWAY_PLAIN_HTTP=%s)',
    (plainHttp) => {
      const c = compile([entry('s', { protocol: 'socks5' })], creds({ s: up }), plainHttp);
      expect(c.upstreams.get('s')!.auth).toEqual({
        line: '',
        authorization: '',
        absoluteUri: false,
        socks5: { credentials: up },
      });
    },
  );

  it('an open socks5 proxy (no credentialsRef) offers no credentials', () => {
    const { credentialsRef: _r, ...open } = entry('s', { protocol: 'socks5' });
    const c = compile([open], creds({}));
    expect(c.upstreams.get('s')!.auth.socks5).toEqual({ credentials: null });
  });

  it.each<[string, UpstreamCredentials | CredentialError, string | null]>([
    [
      'unresolvable credentials',
      new CredentialError({ secret: 's', version: 'latest' }),
      'credentials_unavailable',
    ],
    [
      'a user name over 255 bytes (RFC 1929 ULEN)',
      { username: 'x'.repeat(256), password: 'p' },
      'credentials_too_long',
    ],
    [
      'a password over 255 bytes (RFC 1929 PLEN)',
      { username: 'u', password: 'é'.repeat(128) },
      'credentials_too_long',
    ],
    ['an empty user name', { username: '', password: 'p' }, 'credentials_too_long'],
    ['255 bytes each fit', { username: 'x'.repeat(255), password: 'y'.repeat(255) }, null],
  ])('socks5 entry with %s → %s', (_n, value, reason) => {
    const c = compile([entry('s', { protocol: 'socks5' })], creds({ s: value }));
    expect(c.skipped).toEqual(reason ? [{ proxy: 's', secret: 's', reason }] : []);
    expect(c.upstreams.has('s')).toBe(reason === null);
  });

  it('long credentials are fine for an http upstream (Basic has no such limit)', () => {
    const c = compile([entry('h')], creds({ h: { username: 'x'.repeat(300), password: 'p' } }));
    expect(c.skipped).toEqual([]);
  });
});

describe('compileSnapshot: suspect entries (protocol 5) are split off per route at compile time', () => {
  const ok = { username: 'u', password: 'p' };
  it('a suspect entry is still an upstream, and its routes pick it only after the sound ones', () => {
    const c = compile(
      [entry('a', { suspect: true }), entry('b'), entry('c', { suspect: false })],
      creds({ a: ok, b: ok, c: ok }),
    );
    expect([...c.upstreams.values()].map((u) => [u.name, u.suspect])).toEqual([
      ['a', true],
      ['b', false],
      ['c', false],
    ]);
    const route = c.table.routes[0]!;
    expect(route.candidates.map((u) => u.name)).toEqual(['a', 'b', 'c']);
    expect(route.sound.map((u) => u.name)).toEqual(['b', 'c']);
    expect(route.suspect.map((u) => u.name)).toEqual(['a']);
  });

  it('an entry without the field (an older controller, or a sound proxy) is sound', () => {
    const route = compile([entry('a'), entry('b')], creds({ a: ok, b: ok })).table.routes[0]!;
    expect(route.suspect).toEqual([]);
    expect(route.sound).toBe(route.candidates);
  });
});
