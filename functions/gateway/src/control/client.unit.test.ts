import { describe, expect, it } from 'vitest';
import { buildDelta } from '../../../../shared/src/domain/gateway/delta.js';
import { GatewaySnapshot, sha256Hex } from '../../../../shared/src/messages/gateway-snapshot.js';
import { HttpControlClient } from './client.js';
import { snapshot } from './fakes.js';
import { GoogleIdTokenSource, type TokenSource } from './token.js';

function client(answer: () => Response | Promise<Response>) {
  const seen: Array<{ url: string; init: RequestInit }> = [];
  let invalidated = 0;
  const token: TokenSource = { header: async () => 'Bearer t0k3n', invalidate: () => void invalidated++ };
  const c = new HttpControlClient({
    baseUrl: 'http://api.test/',
    token,
    timeoutMs: 1_000,
    fetch: (async (url: string, init: RequestInit) => {
      seen.push({ url, init });
      return answer();
    }) as typeof fetch,
  });
  return { c, seen, invalidated: () => invalidated };
}

const json = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...headers } });

const ack = { sessionId: 'session-1', version: 3, epoch: 1, checksum: 'a'.repeat(64) };

describe('HttpControlClient: the latest snapshot', () => {
  const names = Array.from({ length: 1_200 }, (_, i) => `p-${String(i).padStart(5, '0')}`);
  const s1 = snapshot(1, names);

  it('a full snapshot is checked against the wire schema in slices, and given as the schema gives it', async () => {
    let pauses = 0;
    const c = new HttpControlClient({
      baseUrl: 'http://api.test',
      token: { header: async () => undefined, invalidate: () => {} },
      timeoutMs: 1_000,
      fetch: (async () => json(200, s1)) as unknown as typeof fetch,
      pause: async () => void pauses++,
    });
    expect(await c.latestSnapshot('gw-1', 's')).toEqual({ ok: true, body: GatewaySnapshot.parse(s1) });
    expect(pauses).toBe(3); // before the first slice, and between the three
  });

  it.each([
    ['a delta', () => buildDelta(s1, snapshot(2, names.slice(1)), sha256Hex)],
    [
      'an entry the schema refuses',
      () => ({ ...s1, proxies: [...s1.proxies.slice(0, 700), { name: 'p-x' }] }),
    ],
    ['not an object', () => 'snapshot'],
  ])('%s in a 2xx → 502 invalid_response', async (_l, body) => {
    const { c } = client(() => json(200, body()));
    expect(await c.latestSnapshot('gw-1', 's')).toMatchObject({
      ok: false,
      status: 502,
      code: 'invalid_response',
    });
  });
});

describe('HttpControlClient', () => {
  it('sends the worker credential and JSON, and validates the answer', async () => {
    const { c, seen } = client(() => json(200, { acceptedVersion: 3, acceptedEpoch: 1, unchanged: false }));
    expect(await c.ack('gw-1', ack)).toEqual({
      ok: true,
      body: { acceptedVersion: 3, acceptedEpoch: 1, unchanged: false },
    });
    expect(seen[0]!.url).toBe('http://api.test/v1/workers/gw-1/ack');
    expect(seen[0]!.init.headers).toMatchObject({
      authorization: 'Bearer t0k3n',
      'content-type': 'application/json',
    });
    expect(JSON.parse(String(seen[0]!.init.body))).toEqual(ack);
  });

  it.each([
    [
      'a contract refusal',
      () => json(409, { error: 'stale_session', message: 'gone' }),
      409,
      'stale_session',
      undefined,
    ],
    [
      'rate limited',
      () => json(429, { error: 'rate_limited' }, { 'retry-after': '7' }),
      429,
      'rate_limited',
      7_000,
    ],
    ['not JSON', () => new Response('<html>bad gateway</html>', { status: 502 }), 502, undefined, undefined],
    [
      'a 2xx that is not the schema',
      () => json(200, { acceptedVersion: 'three' }),
      502,
      'invalid_response',
      undefined,
    ],
    ['no answer at all', () => Promise.reject(new TypeError('fetch failed')), 0, undefined, undefined],
  ])('%s → a refusal with status %i and code %s', async (_l, answer, status, code, retryAfterMs) => {
    const { c } = client(answer);
    const r = await c.ack('gw-1', ack);
    expect(r).toMatchObject({ ok: false, status, code });
    if (!r.ok) expect(r.retryAfterMs).toBe(retryAfterMs);
  });

  it('a runtime report refused as stale_epoch keeps the revokeProxyIds it carries (and only well-formed ones)', async () => {
    const report = {
      sessionId: 'session-1',
      reportSequence: 4,
      snapshotVersion: 3,
      epoch: 1,
      draining: false,
      counts: [],
    };
    const refused = (revokeProxyIds: unknown) =>
      client(() => json(409, { error: 'stale_epoch', message: 'older epoch', revokeProxyIds })).c.runtime(
        'gw-1',
        report,
      );
    expect(await refused(['p-7'])).toMatchObject({ ok: false, code: 'stale_epoch', revokeProxyIds: ['p-7'] });
    expect(await refused([7])).not.toHaveProperty('revokeProxyIds');
    expect(await refused('p-7')).not.toHaveProperty('revokeProxyIds');
  });

  it('a 401 drops the cached identity token', async () => {
    const { c, invalidated } = client(() => json(401, { error: 'unauthenticated' }));
    expect(
      await c.register({ workerId: 'gw-1', instanceId: 'i', zone: 'z', supportedProtocolVersion: 1 }),
    ).toMatchObject({
      ok: false,
      status: 401,
      code: 'unauthenticated',
    });
    expect(invalidated()).toBe(1);
  });

  it('the call timeout covers getting the identity token too (a metadata server that never answers)', async () => {
    let fetched = 0;
    const c = new HttpControlClient({
      baseUrl: 'http://api.test',
      token: { header: () => new Promise<string>(() => {}), invalidate: () => {} },
      timeoutMs: 100,
      fetch: (async () => {
        fetched++;
        return json(200, {});
      }) as unknown as typeof fetch,
    });
    const answer = await Promise.race([
      c.register({ workerId: 'gw-1', instanceId: 'i', zone: 'z', supportedProtocolVersion: 1 }),
      new Promise<'hung'>((r) => setTimeout(() => r('hung'), 2_000)),
    ]);
    expect(answer).toMatchObject({ ok: false, status: 0 });
    expect(fetched).toBe(0);
  });

  it('a token that timed out is not waited on again: the next call asks the metadata server afresh', async () => {
    const asked: number[] = [];
    const auth = {
      getIdTokenClient: () => {
        asked.push(asked.length);
        if (asked.length === 1) return new Promise<never>(() => {});
        return Promise.resolve({
          credentials: {},
          getRequestHeaders: async () => new Headers({ authorization: 'Bearer id-token' }),
        });
      },
    } as unknown as ConstructorParameters<typeof GoogleIdTokenSource>[1];
    const seen: RequestInit[] = [];
    const c = new HttpControlClient({
      baseUrl: 'http://api.test',
      token: new GoogleIdTokenSource('http://api.test', auth),
      timeoutMs: 100,
      fetch: (async (_url: string, init: RequestInit) => {
        seen.push(init);
        return json(404, { error: 'no_snapshot' });
      }) as unknown as typeof fetch,
    });
    expect(await c.latestSnapshot('gw-1', 's')).toMatchObject({ ok: false, status: 0 });
    expect(await c.latestSnapshot('gw-1', 's')).toMatchObject({ ok: false, status: 404 });
    expect(asked).toHaveLength(2);
    expect(seen[0]!.headers).toMatchObject({ authorization: 'Bearer id-token' });
  });

  it('GET snapshot passes the session id in the query and escapes the worker id', async () => {
    const { c, seen } = client(() => json(404, { error: 'no_snapshot' }));
    await c.latestSnapshot('gw.1', 'session-1');
    expect(seen[0]!.url).toBe('http://api.test/v1/workers/gw.1/snapshot?sessionId=session-1');
    expect(seen[0]!.init.method).toBe('GET');
  });
});
