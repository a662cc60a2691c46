// A route's targetCheck URL is stored in Firestore, shown by GET and sent through every proxy of the route
// as the probe's request target: it never carries credentials, however the authority is spelled.
import { describe, expect, it } from 'vitest';
import { TargetCheck } from './gateway-snapshot.js';

const accepts = (url: string) => TargetCheck.safeParse({ url }).success;

describe('TargetCheck.url', () => {
  it.each([
    'http://user:pw@t.example/',
    'https://:token@t.example/',
    'http://user@t.example/',
    // The URL parser skips slashes and backslashes after a special scheme, and then finds the userinfo.
    'http:///user:pw@t.example/',
    'http:/\\user:pw@t.example/',
    'https:\\\\user:pw@t.example/',
  ])('refuses %s', (url) => {
    expect(new URL(url).password !== '' || new URL(url).username !== '').toBe(true);
    expect(accepts(url)).toBe(false);
  });

  it.each(['http://t.example/', 'https://t.example:8443/path?q=a@b', 'http://t.example/#x@y'])(
    'accepts %s (an @ past the authority is no userinfo)',
    (url) => {
      expect(accepts(url)).toBe(true);
    },
  );
});
