import { inspect } from 'node:util';
import { describe, expect, it, vi } from 'vitest';
import { CLI_REQUEST_TIMEOUT_MS } from '../../../cli/http.js';
import { CREDENTIALS_READ_DEADLINE_MS } from '../../../functions/api/src/leases/wiring.js';
import { FALLBACK_LOCK_WAIT_MS } from '../adapters/firestore/lease-grant.js';
import { STORE_CALL_DEADLINE_MS } from '../adapters/firestore/lease-state-access.js';
import { LOCK_WAIT_MS } from '../adapters/firestore/lease-store.js';
import { fakeFetch, grant, Raw } from './client-fixtures.unit.js';
import { DEFAULT_TIMEOUT_MS, LeaseApiError, LeaseClient, NoMatchError } from './index.js';

describe('LeaseClient', () => {
  it('sends the token and the body, and checks the answer against the schema', async () => {
    const f = fakeFetch([[201, grant]]);
    const client = new LeaseClient({ baseUrl: 'http://api/', token: 'tok', fetch: f.fetch });
    expect(await client.acquire({ selector: { region: 'eu' } })).toEqual(grant);
    expect(f.calls[0]?.url).toBe('http://api/v1/leases');
    expect(f.calls[0]?.init.headers).toMatchObject({ authorization: 'Bearer tok' });
    expect(JSON.parse(String(f.calls[0]?.init.body))).toEqual({ selector: { region: 'eu' } });
  });

  it('turns a 409 into NoMatchError with the counts', async () => {
    const counts = {
      error: 'no_match',
      message: 'm',
      considered: 5,
      inGateway: 1,
      atCapacity: 1,
      inCooldown: 1,
      unhealthy: 1,
      cordoned: 1,
      otherProtocol: 2,
    };
    const client = new LeaseClient({ baseUrl: 'http://api', fetch: fakeFetch([[409, counts]]).fetch });
    const err = await client.acquire().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NoMatchError);
    expect((err as NoMatchError).counts).toEqual(counts);
  });

  it('a 409 over cooldowns says when the first is leasable again: cooldownEndsAt and retryAfterSeconds', async () => {
    const counts = {
      error: 'no_match',
      message: 'm',
      considered: 1,
      inGateway: 0,
      atCapacity: 0,
      inCooldown: 1,
      cooldownEndsAt: '2026-12-02T18:00:00.000Z',
      unhealthy: 0,
      cordoned: 0,
      otherProtocol: 0,
    };
    const f = fakeFetch([[409, counts, { 'retry-after': '42' }]]);
    const client = new LeaseClient({ baseUrl: 'http://api', fetch: f.fetch });
    const err = (await client.acquire().catch((e: unknown) => e)) as NoMatchError;
    expect(err).toBeInstanceOf(NoMatchError);
    expect(err.counts.cooldownEndsAt).toBe('2026-12-02T18:00:00.000Z');
    expect(err.retryAfterSeconds).toBe(42);
    // Not retried by the client: the crawler decides whether to wait that long.
    expect(f.calls).toHaveLength(1);
  });

  it('reads a 409 from a service older than inGateway, otherProtocol and cordoned as 0 of each', async () => {
    const old = {
      error: 'no_match',
      message: 'm',
      considered: 1,
      atCapacity: 1,
      inCooldown: 0,
      unhealthy: 0,
    };
    const client = new LeaseClient({ baseUrl: 'http://api', fetch: fakeFetch([[409, old]]).fetch });
    const err = await client.acquire().catch((e: unknown) => e);
    expect((err as NoMatchError).counts).toEqual({ ...old, inGateway: 0, otherProtocol: 0, cordoned: 0 });
  });

  it('sends a new Idempotency-Key per acquire, and the same one on its retries', async () => {
    const f = fakeFetch([
      [503, { error: 'unavailable' }, { 'retry-after': '0' }],
      [201, grant],
      [201, grant],
    ]);
    const client = new LeaseClient({ baseUrl: 'http://api', fetch: f.fetch });
    await client.acquire();
    await client.acquire();
    const keys = f.calls.map((c) => (c.init.headers as Record<string, string>)['idempotency-key']);
    expect(keys[0]).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(keys[1]).toBe(keys[0]);
    expect(keys[2]).not.toBe(keys[0]);
    // Only the acquire carries one: the other routes are idempotent by themselves.
    const g = fakeFetch([[204, null]]);
    await new LeaseClient({ baseUrl: 'http://api', fetch: g.fetch }).release('L1');
    expect(g.calls[0]?.init.headers).not.toHaveProperty('idempotency-key');
  });

  it('retries an acquire whose answer was lost (timeout, reset, a 502/504 of the front end) under the same key', async () => {
    // The cases the Idempotency-Key exists for: the grant may have committed, so the retry must carry the
    // same key (it gets that lease back); a caller's own retry would send a new one and lease twice.
    const calls: Array<Record<string, string>> = [];
    const answers: Array<() => Response> = [
      () => {
        throw new DOMException('The operation was aborted due to timeout', 'TimeoutError');
      },
      () => {
        throw new TypeError('fetch failed');
      },
      () => new Response('<html>502 Bad Gateway</html>', { status: 502 }),
      () => new Response('<html>504 Gateway Timeout</html>', { status: 504 }),
      () => new Response(JSON.stringify(grant), { status: 201 }),
    ];
    const fetch = (async (_url: string, init: RequestInit) => {
      calls.push(init.headers as Record<string, string>);
      return answers.shift()!();
    }) as unknown as typeof globalThis.fetch;
    vi.useFakeTimers();
    try {
      const client = new LeaseClient({ baseUrl: 'http://api', fetch, retries: 4 });
      const acquired = client.acquire().catch((e: unknown) => e);
      await vi.advanceTimersByTimeAsync(4 * 1_000);
      expect(await acquired).toEqual(grant);
    } finally {
      vi.useRealTimers();
    }
    expect(calls).toHaveLength(5);
    expect(new Set(calls.map((h) => h['idempotency-key'])).size).toBe(1);
  });

  it('gives up on a lost answer after its retries with the last error; other calls are not retried on it', async () => {
    const err = new TypeError('fetch failed');
    let n = 0;
    const fetch = (async () => {
      n++;
      throw err;
    }) as unknown as typeof globalThis.fetch;
    const client = new LeaseClient({ baseUrl: 'http://api', fetch, retries: 2 });
    vi.useFakeTimers();
    try {
      const acquired = client.acquire().catch((e: unknown) => e);
      await vi.advanceTimersByTimeAsync(2 * 1_000);
      expect(await acquired).toBe(err);
    } finally {
      vi.useRealTimers();
    }
    expect(n).toBe(3);
    // A renewal too: sent twice it extends once (expiry = now + TTL, never shortened).
    n = 0;
    vi.useFakeTimers();
    try {
      const renewed = client.renew('L1').catch((e: unknown) => e);
      await vi.advanceTimersByTimeAsync(2 * 1_000);
      expect(await renewed).toBe(err);
    } finally {
      vi.useRealTimers();
    }
    expect(n).toBe(3);
  });

  it("sends the caller's idempotencyKey when given: its own retry of a thrown acquire gets the first grant back", async () => {
    const f = fakeFetch([
      [429, { error: 'rate_limited' }, { 'retry-after': '30' }],
      [201, grant],
    ]);
    const client = new LeaseClient({ baseUrl: 'http://api', fetch: f.fetch });
    const key = 'crawl-7f3a:acquire-1';
    expect(await client.acquire({}, { idempotencyKey: key }).catch((e: unknown) => e)).toMatchObject({
      status: 429,
      retryAfterSeconds: 30,
    });
    expect(await client.acquire({}, { idempotencyKey: key })).toEqual(grant);
    expect(f.calls.map((c) => (c.init.headers as Record<string, string>)['idempotency-key'])).toEqual([
      key,
      key,
    ]);
  });

  it('a spent or reused key is a LeaseApiError with its code, not a NoMatchError', async () => {
    const f = fakeFetch([
      [409, { error: 'idempotency_key_spent', message: 'm' }],
      [422, { error: 'idempotency_key_reused', message: 'm' }],
    ]);
    const client = new LeaseClient({ baseUrl: 'http://api', fetch: f.fetch });
    const spent = await client.acquire().catch((e: unknown) => e);
    expect(spent).not.toBeInstanceOf(NoMatchError);
    expect(spent).toMatchObject({ status: 409, code: 'idempotency_key_spent' });
    expect(await client.acquire().catch((e: unknown) => e)).toMatchObject({
      status: 422,
      code: 'idempotency_key_reused',
    });
  });

  it('retries a 503 after Retry-After, then gives up with the stable code', async () => {
    const f = fakeFetch([
      [503, { error: 'unavailable' }, { 'retry-after': '0' }],
      [204, null],
      [503, { error: 'unavailable' }, { 'retry-after': '0' }],
      [503, { error: 'unavailable' }, { 'retry-after': '0' }],
    ]);
    const client = new LeaseClient({ baseUrl: 'http://api', fetch: f.fetch, retries: 1 });
    await client.release('L1');
    const err = await client.release('L2').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LeaseApiError);
    expect(err).toMatchObject({ status: 503, code: 'unavailable' });
    expect(f.calls.map((c) => c.url)).toEqual([
      'http://api/v1/leases/L1',
      'http://api/v1/leases/L1',
      'http://api/v1/leases/L2',
      'http://api/v1/leases/L2',
    ]);
  });

  it('reads a Retry-After that is an HTTP date as the seconds until then', async () => {
    vi.useFakeTimers({ now: Date.parse('2026-12-02T12:00:00Z') });
    try {
      const f = fakeFetch([
        [503, { error: 'unavailable' }, { 'retry-after': 'Wed, 02 Dec 2026 12:00:03 GMT' }],
        [204, null],
      ]);
      const client = new LeaseClient({ baseUrl: 'http://api', fetch: f.fetch, retries: 1 });
      const released = client.release('L1');
      await vi.advanceTimersByTimeAsync(2_900);
      expect(f.calls).toHaveLength(1);
      await vi.advanceTimersByTimeAsync(200);
      await released;
      expect(f.calls).toHaveLength(2);
    } finally {
      vi.useRealTimers();
    }
  });

  it('retries a 503 whose body is not JSON (the front end’s HTML page), then gives up with http_error', async () => {
    const html = new Raw('<html><title>503 Service Unavailable</title></html>');
    const f = fakeFetch([
      [503, html, { 'content-type': 'text/html', 'retry-after': '0' }],
      [204, null],
      [502, html, { 'content-type': 'text/html' }],
      [502, html, { 'content-type': 'text/html' }],
    ]);
    const client = new LeaseClient({ baseUrl: 'http://api', fetch: f.fetch, retries: 1 });
    await client.release('L1');
    expect(f.calls).toHaveLength(2);
    // A lost answer (a 502) is sent again once (retries: 1), then given up.
    const err = await client.renew('L2').catch((e: unknown) => e);
    expect(f.calls).toHaveLength(4);
    expect(err).toBeInstanceOf(LeaseApiError);
    expect(err).toMatchObject({ status: 502, code: 'http_error', body: html.text });
  });

  it('refuses a 2xx whose body is not JSON with bad_response', async () => {
    const client = new LeaseClient({
      baseUrl: 'http://api',
      fetch: fakeFetch([[200, new Raw('<html>sign in</html>')]]).fetch,
    });
    await expect(client.listProxies()).rejects.toMatchObject({ status: 200, code: 'bad_response' });
  });

  it('refuses an answer that does not match the schema', async () => {
    const client = new LeaseClient({
      baseUrl: 'http://api',
      fetch: fakeFetch([[201, { leaseId: 1 }]]).fetch,
    });
    await expect(client.acquire()).rejects.toThrow();
  });

  describe('a 201 it cannot use', () => {
    const skewed = { ...grant, proxy: { ...grant.proxy, port: '3128' } };

    it('releases the lease before throwing the schema error', async () => {
      const f = fakeFetch([
        [201, skewed],
        [204, null],
      ]);
      const client = new LeaseClient({ baseUrl: 'http://api', fetch: f.fetch });
      const err = await client.acquire().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(Error);
      expect(err).not.toBeInstanceOf(LeaseApiError);
      expect(f.calls.map((c) => [c.init.method, c.url])).toEqual([
        ['POST', 'http://api/v1/leases'],
        ['DELETE', `http://api/v1/leases/${grant.leaseId}`],
      ]);
    });

    it('releases it by the id read from a body cut short, then throws bad_response', async () => {
      const cut = new Raw(JSON.stringify(grant).slice(0, 60));
      const f = fakeFetch([
        [201, cut],
        [204, null],
      ]);
      const client = new LeaseClient({ baseUrl: 'http://api', fetch: f.fetch });
      await expect(client.acquire()).rejects.toMatchObject({ status: 201, code: 'bad_response' });
      expect(f.calls[1]).toMatchObject({
        url: `http://api/v1/leases/${grant.leaseId}`,
        init: { method: 'DELETE' },
      });
    });

    it.each([
      ['after the password', 100],
      ['inside the password', 82],
    ])('keeps the proxy credentials out of a bad_response cut short %s', async (_, at) => {
      const secret = { ...grant, proxy: { ...grant.proxy, url: 'http://user:s3cret-pw@10.0.0.1:3128' } };
      const text = JSON.stringify(secret).slice(0, at);
      expect(text).toContain('s3cr');
      const f = fakeFetch([
        [201, new Raw(text)],
        [204, null],
      ]);
      const client = new LeaseClient({ baseUrl: 'http://api', fetch: f.fetch });
      const err = await client.acquire().catch((e: unknown) => e);
      expect(err).toMatchObject({ status: 201, code: 'bad_response' });
      // What a crawler's console.error(err) or logger prints: the error's own fields, body included.
      expect(inspect(err)).not.toMatch(/s3cr/);
      expect(inspect(err)).toContain(grant.leaseId);
      expect(f.calls[1]).toMatchObject({ url: `http://api/v1/leases/${grant.leaseId}` });
    });

    it('throws the schema error, not the release’s, when the release fails', async () => {
      const f = fakeFetch([
        [201, skewed],
        [500, { error: 'internal' }],
      ]);
      const client = new LeaseClient({ baseUrl: 'http://api', fetch: f.fetch, retries: 0 });
      const err = await client.acquire().catch((e: unknown) => e);
      expect(err).not.toBeInstanceOf(LeaseApiError);
      expect(f.calls).toHaveLength(2);
    });

    it.each([
      ['no lease id', { leaseId: 1 }],
      ['an id that is no lease id', { ...skewed, leaseId: '../proxies' }],
      ['a body with no id in it', new Raw('<html>sign in</html>')],
    ])('sends nothing more for %s', async (_, body) => {
      const f = fakeFetch([[201, body]]);
      const client = new LeaseClient({ baseUrl: 'http://api', fetch: f.fetch });
      await expect(client.acquire()).rejects.toThrow();
      expect(f.calls).toHaveLength(1);
    });
  });

  it('releases a lease whatever withLease’s callback does', async () => {
    const f = fakeFetch([
      [201, grant],
      [204, null],
    ]);
    const client = new LeaseClient({ baseUrl: 'http://api', fetch: f.fetch });
    await expect(
      client.withLease({}, async () => {
        throw new Error('crawl failed');
      }),
    ).rejects.toThrow('crawl failed');
    expect(f.calls[1]).toMatchObject({
      url: `http://api/v1/leases/${grant.leaseId}`,
      init: { method: 'DELETE' },
    });
  });

  it('throws withLease’s callback error, not the release’s, when both fail', async () => {
    const f = fakeFetch([
      [201, grant],
      [503, { error: 'unavailable' }, { 'retry-after': '0' }],
    ]);
    const client = new LeaseClient({ baseUrl: 'http://api', fetch: f.fetch, retries: 0 });
    await expect(
      client.withLease({}, async () => {
        throw new Error('crawl failed');
      }),
    ).rejects.toThrow('crawl failed');
    expect(f.calls).toHaveLength(2);
  });

  it('returns withLease’s callback result when the release fails: the crawl is not lost (the TTL ends the lease)', async () => {
    const f = fakeFetch([
      [201, grant],
      [503, { error: 'unavailable' }, { 'retry-after': '0' }],
    ]);
    const client = new LeaseClient({ baseUrl: 'http://api', fetch: f.fetch, retries: 0 });
    await expect(client.withLease({}, async () => 'page')).resolves.toBe('page');
    expect(f.calls).toHaveLength(2);
  });

  it('sends a release or a report again when its answer was lost (both are safe to repeat)', async () => {
    // A reset, then Cloud Run's 502: either may come after the service did the work.
    const sent: string[] = [];
    const answers: Array<() => Response> = [
      () => {
        throw new TypeError('fetch failed');
      },
      () => new Response(null, { status: 204 }),
      () => new Response('<html>502 Bad Gateway</html>', { status: 502 }),
      () => new Response(null, { status: 204 }),
    ];
    const fetch = (async (url: string, init: RequestInit) => {
      sent.push(`${init.method} ${url}`);
      return answers.shift()!();
    }) as unknown as typeof globalThis.fetch;
    const client = new LeaseClient({ baseUrl: 'http://api', fetch });
    vi.useFakeTimers();
    try {
      const released = client.release('L1');
      await vi.advanceTimersByTimeAsync(1_000);
      await expect(released).resolves.toBeUndefined();
      const reported = client.report('L1', 'rate_limited');
      await vi.advanceTimersByTimeAsync(1_000);
      await expect(reported).resolves.toBeUndefined();
    } finally {
      vi.useRealTimers();
    }
    expect(sent).toEqual([
      'DELETE http://api/v1/leases/L1',
      'DELETE http://api/v1/leases/L1',
      'POST http://api/v1/leases/L1/report',
      'POST http://api/v1/leases/L1/report',
    ]);
  });

  it('withLease returns its callback’s result when the release’s first answer was lost', async () => {
    const answers: Array<() => Response> = [
      () => new Response(JSON.stringify(grant), { status: 201 }),
      () => {
        throw new TypeError('fetch failed');
      },
      () => new Response(null, { status: 204 }),
    ];
    const methods: string[] = [];
    const fetch = (async (_url: string, init: RequestInit) => {
      methods.push(String(init.method));
      return answers.shift()!();
    }) as unknown as typeof globalThis.fetch;
    const client = new LeaseClient({ baseUrl: 'http://api', fetch });
    vi.useFakeTimers();
    try {
      const done = client.withLease({}, async () => 'page');
      await vi.advanceTimersByTimeAsync(1_000);
      await expect(done).resolves.toBe('page');
    } finally {
      vi.useRealTimers();
    }
    expect(methods).toEqual(['POST', 'DELETE', 'DELETE']);
  });

  it('sends a token read from a file without its trailing newline, and an empty one as none', async () => {
    const f = fakeFetch([
      [204, null],
      [204, null],
    ]);
    await new LeaseClient({ baseUrl: 'http://api', token: 'tok-123\r\n', fetch: f.fetch }).release('L1');
    await new LeaseClient({ baseUrl: 'http://api', token: '', fetch: f.fetch }).release('L2');
    expect(f.calls[0]?.init.headers).toMatchObject({ authorization: 'Bearer tok-123' });
    expect(f.calls[1]?.init.headers).not.toHaveProperty('authorization');
  });

  it('refuses a token with a line break without quoting it', () => {
    const make = () => new LeaseClient({ baseUrl: 'http://api', token: 'tok-SECRET\nline' });
    expect(make).toThrow(TypeError);
    expect(make).not.toThrow(/SECRET/);
  });

  it.each<[string, unknown]>([
    ['missing (an env variable the shell does not set)', undefined],
    ['empty', ''],
    ['without a scheme', '127.0.0.1:18300'],
    ['of another scheme', 'ftp://api'],
  ])('refuses a base URL %s at once, saying what it wants', (_, baseUrl) => {
    const make = () => new LeaseClient({ baseUrl: baseUrl as string, token: 'tok' });
    expect(make).toThrow(TypeError);
    expect(make).toThrow(/LeaseClient: baseUrl must be the API's http\(s\) URL/);
  });

  it('does not quote a base URL it refuses (it may carry a password)', () => {
    const make = () => new LeaseClient({ baseUrl: 'ftp://u:SECRET@api' });
    expect(make).toThrow(TypeError);
    expect(make).not.toThrow(/SECRET/);
  });

  it.each<[string, Record<string, unknown>]>([
    ['a timeout of 0 (it aborted every call at once)', { timeoutMs: 0 }],
    ['a timeout past what a timer keeps (it fired after 1 ms)', { timeoutMs: 30 * 86_400_000 }],
    ['a timeout of NaN (Number() of an unset variable)', { timeoutMs: Number.NaN }],
    ['a negative timeout', { timeoutMs: -1 }],
    ['an infinite timeout', { timeoutMs: Number.POSITIVE_INFINITY }],
    ['a fractional timeout', { timeoutMs: 1.5 }],
    ['retries of NaN (it never stopped retrying)', { retries: Number.NaN }],
    ['negative retries', { retries: -1 }],
  ])('refuses %s at once', (_, opts) => {
    expect(() => new LeaseClient({ baseUrl: 'http://api', ...opts })).toThrow(
      /LeaseClient: (timeoutMs|retries) must be a whole number/,
    );
  });

  it('takes a timeout up to what a timer keeps, and 0 retries', () => {
    expect(
      () => new LeaseClient({ baseUrl: 'http://api', timeoutMs: 2 ** 31 - 1, retries: 0 }),
    ).not.toThrow();
  });

  it('encodes list filters', async () => {
    const f = fakeFetch([[200, { proxies: [], count: 0 }]]);
    const client = new LeaseClient({ baseUrl: 'http://api', fetch: f.fetch });
    await client.listProxies({ attributes: { region: 'eu west' }, healthy: true, protocol: 'socks5' });
    expect(f.calls[0]?.url).toBe(
      'http://api/v1/proxies?attr.region=eu+west&healthy=true&protocol=socks5&pageSize=1000',
    );
  });

  const listed = (name: string) => ({
    name,
    spec: { attributes: {}, capacity: 2 },
    status: { phase: 'Ready', latencyMillis: null },
    healthy: true,
    leasable: true,
    activeLeases: 0,
  });

  it('listProxies follows every page, with the same filters, and answers them as one listing', async () => {
    const f = fakeFetch([
      [200, { proxies: [listed('a'), listed('b')], count: 2, nextPageToken: 'T1' }],
      // A page that healthy=true left empty: not the end while it carries a token.
      [200, { proxies: [], count: 0, nextPageToken: 'T2' }],
      [200, { proxies: [listed('c')], count: 1, nextPageToken: null }],
    ]);
    const client = new LeaseClient({ baseUrl: 'http://api', fetch: f.fetch });
    const all = await client.listProxies({ healthy: true }, { pageSize: 2 });
    expect(all).toEqual({ proxies: [listed('a'), listed('b'), listed('c')], count: 3 });
    expect(f.calls.map((c) => c.url)).toEqual([
      'http://api/v1/proxies?healthy=true&pageSize=2',
      'http://api/v1/proxies?healthy=true&pageSize=2&pageToken=T1',
      'http://api/v1/proxies?healthy=true&pageSize=2&pageToken=T2',
    ]);
  });

  it('listProxiesPage asks for one page and answers its nextPageToken', async () => {
    const f = fakeFetch([[200, { proxies: [listed('b')], count: 1, nextPageToken: 'T2' }]]);
    const client = new LeaseClient({ baseUrl: 'http://api', fetch: f.fetch });
    const page = await client.listProxiesPage({ leasable: true }, { pageSize: 1, pageToken: 'T1' });
    expect(page).toEqual({ proxies: [listed('b')], count: 1, nextPageToken: 'T2' });
    expect(f.calls[0]?.url).toBe('http://api/v1/proxies?leasable=true&pageSize=1&pageToken=T1');
  });

  it('asks a service older than paging (it refuses pageSize as unknown) once more, unpaged', async () => {
    const refused = {
      error: 'invalid_request',
      message: 'invalid query string',
      issues: [{ path: 'pageSize', code: 'custom', message: 'unknown query parameter (use phase, …)' }],
    };
    const f = fakeFetch([
      [400, refused],
      [200, { proxies: [listed('a')], count: 1 }],
    ]);
    const client = new LeaseClient({ baseUrl: 'http://api', fetch: f.fetch });
    expect(await client.listProxies({ attributes: { region: 'eu' } })).toEqual({
      proxies: [listed('a')],
      count: 1,
    });
    expect(f.calls.map((c) => c.url)).toEqual([
      'http://api/v1/proxies?attr.region=eu&pageSize=1000',
      'http://api/v1/proxies?attr.region=eu',
    ]);
    // Any other refusal is the caller's to see.
    const bad = { ...refused, issues: [{ path: 'pageSize', code: 'custom', message: 'pageSize must be…' }] };
    const other = new LeaseClient({ baseUrl: 'http://api', fetch: fakeFetch([[400, bad]]).fetch });
    await expect(other.listProxies({}, { pageSize: 5000 })).rejects.toMatchObject({
      status: 400,
      code: 'invalid_request',
    });
  });

  it('refuses a next page token that does not advance (it would never end): bad_response', async () => {
    const f = fakeFetch([
      [200, { proxies: [listed('a')], count: 1, nextPageToken: 'T1' }],
      [200, { proxies: [], count: 0, nextPageToken: 'T1' }],
    ]);
    const client = new LeaseClient({ baseUrl: 'http://api', fetch: f.fetch });
    await expect(client.listProxies()).rejects.toMatchObject({ status: 200, code: 'bad_response' });
    expect(f.calls).toHaveLength(2);
  });
});

describe('the default timeouts of the lease client and the CLI', () => {
  // A write waits up to LOCK_WAIT_MS for its turn on a busy proxy's lock, then makes its calls under it
  // (STORE_CALL_DEADLINE_MS each), and only then answers 503 with Retry-After. A client that gave up at the
  // same 30 s never saw that answer: it sent the request again behind its own first copy, still queued.
  it('outlast the lease service’s wait for a lock, a read and a commit after it, and a grant’s credentials read', () => {
    const slowest =
      LOCK_WAIT_MS + FALLBACK_LOCK_WAIT_MS + 2 * STORE_CALL_DEADLINE_MS + CREDENTIALS_READ_DEADLINE_MS;
    expect(DEFAULT_TIMEOUT_MS).toBeGreaterThan(slowest);
    expect(CLI_REQUEST_TIMEOUT_MS).toBeGreaterThan(slowest);
  });
});
