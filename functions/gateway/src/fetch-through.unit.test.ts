// /v1/fetch's URL checks in fetchThrough, before any look-up: a URL the WHATWG parser takes but no target
// can answer is a 400 bad_url (docs/gateway.md § Error codes), not a guard's refusal after a DNS look-up.
import { describe, expect, it } from 'vitest';
import { parseAllowList } from '../../../shared/src/domain/gateway/ssrf.js';
import { type FetchDeps, fetchThrough } from './fetch-through.js';
import { TargetGuard } from './target-guard.js';

/** A worker that takes requests, a guard whose look-ups are counted; nothing past the guard is reached. */
function deps() {
  const lookups: string[] = [];
  const guard = new TargetGuard(
    parseAllowList([]).allow,
    async (host) => {
      lookups.push(host);
      return ['93.184.216.34'];
    },
    { ttlMs: 0, maxEntries: 10, now: () => 0 },
  );
  const worker = {
    accepting: true,
    checking: 0,
    refusalAfterLookup: () => undefined,
    phase: () => 'serving',
  };
  const ssrf: string[] = [];
  const recorder = { ssrfRefused: (_listener: string, reason: string) => ssrf.push(reason) };
  return { lookups, ssrf, deps: { worker, guard, recorder, maxTimeoutMs: 30_000 } as unknown as FetchDeps };
}

describe('fetchThrough: a URL no target can answer', () => {
  // WHATWG URL keeps an empty label a name (`127.0.0.1..` is `127.0.0.1.` after normalizeHost): no DNS
  // name, a 400 as on the proxy listener, not the guard's 502 target_unresolvable that clients retry.
  it.each([
    'http://example.com:0/',
    'https://example.com:000/x',
    'http://93.184.216.34:0/',
    'http://a..b/',
    'http://127.0.0.1../',
    'http://example.com../',
  ])('%s is a 400 bad_url, refused before any look-up', async (url) => {
    const d = deps();
    const r = await fetchThrough(
      { url, method: 'GET', headers: {}, bodyEncoding: 'utf8' },
      'crawler',
      d.deps,
    );
    expect(r).toMatchObject({ ok: false, status: 400, code: 'bad_url' });
    expect(d.lookups).toEqual([]);
    expect(d.ssrf).toEqual([]);
  });
});
