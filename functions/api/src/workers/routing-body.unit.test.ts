// A route's targetCheck URL is stored in Firestore, shown by GET and sent through every proxy of the route
// as the probe's request target: the admin PUT refuses one that carries credentials, however the authority
// is spelled — the URL parser skips slashes and backslashes after a special scheme, then finds userinfo.
import { describe, expect, it } from 'vitest';
import { RoutingRule } from '../../../../shared/src/messages/gateway-snapshot.js';
import { RoutingBody } from './admin-openapi.js';

const body = (url: string) => ({
  routes: [
    { name: 'shop', match: { hosts: ['*'] }, selector: {}, policy: 'least-active', targetCheck: { url } },
  ],
});

describe('the routing PUT body: targetCheck.url', () => {
  it.each([
    'http://user:pw@t.example/',
    'https://:token@t.example/',
    'http://user@t.example/',
    'http:///user:pw@t.example/',
    'http:/\\user:pw@t.example/',
    'https:\\\\user:pw@t.example/',
  ])('refuses %s', (url) => {
    const parsed = new URL(url);
    expect(parsed.username !== '' || parsed.password !== '').toBe(true);
    expect(RoutingBody.safeParse(body(url)).success).toBe(false);
  });

  it('says why, at the field', () => {
    const r = RoutingBody.safeParse(body('http:///user:pw@t.example/'));
    expect(r.error?.issues).toContainEqual(
      expect.objectContaining({
        path: ['routes', 0, 'targetCheck', 'url'],
        message: 'a target check URL must not carry credentials',
      }),
    );
  });

  it.each(['http://t.example/', 'https://t.example:8443/path?q=a@b', 'http://t.example/#x@y'])(
    'accepts %s (an @ past the authority is no userinfo)',
    (url) => {
      expect(RoutingBody.safeParse(body(url)).success).toBe(true);
    },
  );

  it('a routing document stored with such a URL before still parses (the pass must not stop on it)', () => {
    expect(RoutingRule.safeParse(body('http:///user:pw@t.example/').routes[0]).success).toBe(true);
  });
});

// HostPattern reads a name's trailing dot since 2026-12-07; earlier builds read it only on names in hex
// digits. A routing stored with `shop.example.` would be one those builds — gateways mid-rollout, a
// rollback — cannot parse: the dot is taken and dropped, never stored (the store drops it too).
describe('the routing PUT body: a host name with a trailing dot', () => {
  const PRE_2026_12_07_HOST = /^(\*|(\*\.)?[a-z0-9_]([-a-z0-9_.]*[a-z0-9_])?|[0-9a-f:.]+)$/;
  it('is taken without its dot, in a form every build reads; an IPv6 literal is left as it is', () => {
    const hosts = ['shop.example.', '*.example.com.', 'Cafe.Be.', '10.0.0.1', '[2001:db8::1]', '*'];
    const r = RoutingBody.parse({
      routes: [{ name: 'shop', match: { hosts }, selector: {}, policy: 'least-active' }],
    });
    const stored = r.routes[0]!.match.hosts;
    expect(stored).toEqual(['shop.example', '*.example.com', 'cafe.be', '10.0.0.1', '2001:db8::1', '*']);
    for (const h of stored) expect(h).toMatch(PRE_2026_12_07_HOST);
  });
});
