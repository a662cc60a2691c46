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
