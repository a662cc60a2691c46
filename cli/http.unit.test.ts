// A success status whose body is not JSON is not the API's answer (a web server, sign-in page or load
// balancer at the --api URL): before, the CLI took the text as the answer — `-o json` printed
// {"message": "<html…"} and a release said "released", exit 0, though nothing reached the API.
import { describe, expect, it, vi } from 'vitest';
import { ApiClient } from './http.js';
import { runCli } from './run.js';
import { cliDeps, recordingIo } from './testing.js';

const page = '<!doctype html><html><body>Sign in</body></html>';

async function run(argv: string[], body: string | null, status = 200) {
  const io = recordingIo();
  const fetch = (async () =>
    new Response(body, { status, headers: { 'content-type': 'text/html' } })) as typeof globalThis.fetch;
  const exit = await runCli([...argv, '--api', 'http://127.0.0.1:9'], cliDeps(io, fetch));
  return { exit, out: io.outLines, err: io.errLines };
}

describe('a 2xx answer that is not JSON', () => {
  it.each([
    [['proxies', 'get', 'p1', '-o', 'json']],
    [['proxies', 'list', '-o', 'yaml']],
    [['leases', 'release', 'l-1']],
    [['gateway', 'unreclaim', 'p1']],
  ])('%j: error bad_response, exit 1, nothing on stdout', async (argv) => {
    const r = await run(argv, page);
    expect(r.out).toEqual([]);
    expect(r.exit).toBe(1);
    expect(r.err[0]).toBe(
      'error: bad_response — the API answered HTTP 200 with a body that is not JSON (is --api / PROXYPLANE_API_URL the API?)',
    );
  });

  it('an empty 2xx body (204) is still a success', async () => {
    const r = await run(['leases', 'release', 'l-1'], null, 204);
    expect(r).toEqual({ exit: 0, out: ['lease l-1 released'], err: [] });
  });
});

// An empty 2xx, or JSON that is no object, was taken as the answer too: `proxies create` printed
// "proxy/p1 created" and exited 0, `apply` read the GET's null as an absent proxy, `get` printed `null`.
describe('a 2xx answer that is empty, or JSON but no object', () => {
  const proxyFile = JSON.stringify({
    name: 'p1',
    spec: { mode: 'external', endpoint: { host: 'h.example', port: 3128 } },
  });

  /** runCli against a fetch that answers every call `answer()`; -f - reads the proxy file above. */
  async function against(argv: string[], answer: () => Response) {
    const io = { ...recordingIo(), readStdin: async () => proxyFile };
    const fetch = (async () => answer()) as typeof globalThis.fetch;
    const exit = await runCli([...argv, '--api', 'http://127.0.0.1:9'], cliDeps(io, fetch));
    return { exit, out: io.outLines, err: io.errLines };
  }

  it.each([
    [['proxies', 'create', '-f', '-'], () => new Response('', { status: 200 })],
    [['proxies', 'create', '-f', '-'], () => new Response(null, { status: 204 })],
    [['proxies', 'apply', '-f', '-'], () => new Response('', { status: 200 })],
    [['proxies', 'get', 'p1'], () => new Response('null', { status: 200 })],
    [['proxies', 'list'], () => new Response('[]', { status: 200 })],
    [['jobs', 'list'], () => new Response('"ok"', { status: 200 })],
  ])('%j: error bad_response, exit 1, nothing on stdout', async (argv, answer) => {
    const r = await against(argv, answer);
    expect(r.out).toEqual([]);
    expect(r.exit).toBe(1);
    expect(r.err[0]).toMatch(
      /^error: bad_response — the API answered HTTP 20[04] with (no body|JSON that is no object \(.+\)) where [A-Z]+ \/v1\/\S+ answers an object/,
    );
  });

  // Their routes answer 204 No Content: the one empty success, kept (noContent).
  it.each([
    [['leases', 'release', 'l-1'], 'lease l-1 released'],
    [['leases', 'report', 'l-1', 'ok'], 'lease l-1 reported ok'],
    [['gateway', 'unreclaim', 'p1'], 'proxy p1: no reclaim stands'],
  ])('%j answered 204: still a success', async (argv, said) => {
    const r = await against(argv, () => new Response(null, { status: 204 }));
    expect(r.exit).toBe(0);
    expect(r.out[0]).toContain(said);
    expect(r.err).toEqual([]);
  });
});

// A 503's Retry-After may be delay-seconds or an HTTP date (RFC 9110 §10.2.3; a front end or proxy in the
// way may send the date). Before, Number() of a date was NaN and the CLI gave up at once.
describe('a 503 with Retry-After', () => {
  const T0 = Date.parse('2026-12-02T12:00:00Z');

  function client(retryAfter: (now: number) => string) {
    const calls: number[] = [];
    const fetch = (async () => {
      calls.push(Date.now());
      if (calls.length === 1) {
        return new Response(JSON.stringify({ error: 'unavailable', message: 'try later' }), {
          status: 503,
          headers: { 'content-type': 'application/json', 'retry-after': retryAfter(Date.now()) },
        });
      }
      return Response.json({ ok: true });
    }) as typeof globalThis.fetch;
    const tokens = { env: {}, localState: () => null, gcloudToken: () => null };
    return { api: new ApiClient({ baseUrl: 'http://127.0.0.1:9', tokens, fetch }), calls };
  }

  async function withFakeTime<T>(run: () => Promise<T>): Promise<T> {
    vi.useFakeTimers({ now: T0, toFake: ['setTimeout', 'Date'] });
    try {
      return await run();
    } finally {
      vi.useRealTimers();
    }
  }

  it.each([
    ['delay-seconds', () => '3'],
    ['an HTTP date', (now: number) => new Date(now + 3000).toUTCString()],
  ])('as %s: retried once, when it says', async (_form, header) =>
    withFakeTime(async () => {
      const { api, calls } = client(header);
      const answer = api.call('GET', '/v1/proxies', { role: 'admin' });
      await vi.advanceTimersByTimeAsync(2900);
      expect(calls).toHaveLength(1);
      await vi.advanceTimersByTimeAsync(200);
      await expect(answer).resolves.toEqual({ ok: true });
      expect(calls.map((t) => t - T0)).toEqual([0, 3000]);
    }),
  );

  it.each([
    ['30 s as delay-seconds', () => '30'],
    ['30 s as an HTTP date', (now: number) => new Date(now + 30_000).toUTCString()],
    ['unreadable', () => 'soon'],
  ])('%s: not waited for, the 503 is the answer', async (_form, header) =>
    withFakeTime(async () => {
      const { api, calls } = client(header);
      await expect(api.call('GET', '/v1/proxies', { role: 'admin' })).rejects.toMatchObject({
        status: 503,
        code: 'unavailable',
      });
      expect(calls).toHaveLength(1);
    }),
  );
});

// A create answered 503 may have landed all the same (a commit whose answer was lost): its retry then
// meets already_exists, which used to tell the person to delete the proxy the first attempt had made.
describe('a create whose retry meets already_exists', () => {
  /** `proxies create` of one proxy, answered `first` (then retried), then 409 already_exists. */
  async function createAfter(first: { status: number; error: string }) {
    const body = JSON.stringify({
      name: 'p1',
      spec: { mode: 'external', endpoint: { host: 'h.example', port: 3128 } },
    });
    const io = { ...recordingIo(), readStdin: async () => body };
    const answers = [
      Response.json(
        { error: first.error, message: 'try again' },
        { status: first.status, headers: { 'retry-after': '0' } },
      ),
      Response.json({ error: 'already_exists', message: 'proxy p1 exists' }, { status: 409 }),
    ];
    const fetch = (async () => answers.shift()!) as typeof globalThis.fetch;
    const exit = await runCli(
      ['proxies', 'create', '-f', '-', '--api', 'http://127.0.0.1:9'],
      cliDeps(io, fetch),
    );
    expect(exit).toBe(1);
    expect(answers).toEqual([]);
    return io.errLines[0];
  }

  it('after a 503: says the first attempt may have created it, not that the name is taken', async () => {
    expect(await createAfter({ status: 503, error: 'unavailable' })).toBe(
      'error: already_exists — the first attempt was answered 503 but may have created it: `proxyplane proxies get NAME` shows whether that proxy is the one just sent',
    );
  });

  it('after a 429 (the rate limit, which changed nothing): the name is taken', async () => {
    expect(await createAfter({ status: 429, error: 'rate_limited' })).toBe(
      'error: already_exists — that name is taken: pick another, or `proxyplane proxies delete NAME` first',
    );
  });
});

// Headers in, then the body fails (the request timeout fires mid-body, the connection resets): that is no
// answer, said as `unreachable` — it was `internal`, which reads as a fault of the CLI's own.
describe('a body that fails after the headers', () => {
  it('is unreachable, not internal', async () => {
    const io = recordingIo();
    const fetch = (async () => {
      const body = new ReadableStream({
        pull(controller) {
          controller.error(Object.assign(new Error('terminated'), { name: 'TypeError' }));
        },
      });
      return new Response(body, { status: 200, headers: { 'content-type': 'application/json' } });
    }) as typeof globalThis.fetch;
    const exit = await runCli(['proxies', 'get', 'p1', '--api', 'http://127.0.0.1:9'], cliDeps(io, fetch));
    expect(exit).toBe(1);
    expect(io.outLines).toEqual([]);
    expect(io.errLines[0]).toMatch(/^error: unreachable — cannot reach http:\/\/127\.0\.0\.1:9 /);
  });
});

// The API says what could not be done; the CLI's line for `unavailable` used to drop it for a generic one.
describe('a 503 unavailable that is not retried', () => {
  it("says the API's reason", async () => {
    const io = recordingIo();
    const fetch = (async () =>
      Response.json(
        { error: 'unavailable', message: 'credentials of the matching proxies cannot be read now' },
        { status: 503, headers: { 'retry-after': '30' } },
      )) as typeof globalThis.fetch;
    const exit = await runCli(['leases', 'acquire', '--api', 'http://127.0.0.1:9'], cliDeps(io, fetch));
    expect(exit).toBe(1);
    expect(io.errLines[0]).toBe(
      'error: unavailable — the service could not do it right now (credentials of the matching proxies cannot be read now): retry in a moment',
    );
  });
});

// fetch followed redirects: a POST answered 301/302 became a GET without its body (a listing answered,
// "created", exit 0), and a redirect to another origin dropped the token (an expired-credential hint).
describe('a redirect', () => {
  it('is never followed: error bad_response naming where it points, exit 1, one request', async () => {
    const io = recordingIo();
    const seen: Array<{ url: string; redirect: RequestRedirect | undefined }> = [];
    const fetch = (async (url: string, init: RequestInit) => {
      seen.push({ url, redirect: init.redirect });
      return new Response(null, { status: 301, headers: { location: 'https://api.example/v1/proxies/p1' } });
    }) as unknown as typeof globalThis.fetch;
    const exit = await runCli(['proxies', 'get', 'p1', '--api', 'http://127.0.0.1:9'], cliDeps(io, fetch));
    expect(exit).toBe(1);
    expect(seen).toEqual([{ url: 'http://127.0.0.1:9/v1/proxies/p1', redirect: 'manual' }]);
    expect(io.errLines[0]).toBe(
      'error: bad_response — the API answered HTTP 301 redirecting to https://api.example/v1/proxies/p1: not followed; use https://api.example as --api (PROXYPLANE_API_URL)',
    );
  });
});

// A front end's HTML error page (a wrong --api, Cloud Run's 403) came out whole, several lines of markup
// cut mid-tag; an error is one line (docs/cli.md).
describe('an error answer that is not JSON', () => {
  it('is one line naming the status and what the body began with', async () => {
    const r = await run(
      ['proxies', 'get', 'p1'],
      '<html>\n<head><title>403 Forbidden</title></head>\n</html>',
      403,
    );
    expect(r.exit).toBe(1);
    expect(r.err).toHaveLength(1);
    expect(r.err[0]).toMatch(
      /^error: http_403 — HTTP 403 with a body that is not JSON \(is --api .* A Cloud Run front end refusing the caller\?\): <html> <head><title>403 Forbidden/,
    );
  });
});

// docs/leases.md § Idempotent acquire: an answer lost (a timeout, a reset, a 500/502/504) is what the key is
// for. The CLI retried only a 503: a lost answer failed at once while the grant could hold its slot, up to
// an hour, under an id nobody knew.
describe('an acquire whose answer is lost', () => {
  const grant = {
    leaseId: 'lease-1',
    proxy: { name: 'p1', url: 'http://u:p@10.0.0.1:3128', protocol: 'http', attributes: {} },
    expiresAt: '2026-12-05T13:00:00.000Z',
    ttlSeconds: 300,
  };
  it.each([
    ['a timeout', () => Promise.reject(new DOMException('timed out', 'TimeoutError'))],
    ['a reset', () => Promise.reject(new TypeError('fetch failed'))],
    ['a 502 of the front end', async () => new Response('<html>bad gateway</html>', { status: 502 })],
  ])(
    '%s: sent again under the same Idempotency-Key, and the lease it carried is printed',
    async (_n, lost) => {
      vi.useFakeTimers({ toFake: ['setTimeout'] });
      try {
        const io = recordingIo();
        const keys: Array<string | null> = [];
        const fetch = (async (_url: string, init: RequestInit) => {
          keys.push(new Headers(init.headers).get('idempotency-key'));
          if (keys.length === 1) return lost();
          return new Response(JSON.stringify(grant), { status: 201 });
        }) as unknown as typeof globalThis.fetch;
        const running = runCli(
          ['leases', 'acquire', '-o', 'json', '--api', 'http://127.0.0.1:9'],
          cliDeps(io, fetch, { PROXYPLANE_CRAWLER_TOKEN: 'crawler-token-0123456789' }),
        );
        await vi.advanceTimersByTimeAsync(1_500);
        expect(await running).toBe(0);
        expect(keys).toHaveLength(2);
        expect(keys[1]).toBe(keys[0]);
        expect(keys[0]).toMatch(/^[0-9a-f-]{36}$/);
        expect(JSON.parse(io.outLines.join('\n'))).toMatchObject({ leaseId: 'lease-1' });
      } finally {
        vi.useRealTimers();
      }
    },
  );

  it('a request that is not idempotent (a release) is not sent again after a lost answer', async () => {
    const io = recordingIo();
    let calls = 0;
    const fetch = (async () => {
      calls++;
      throw new TypeError('fetch failed');
    }) as unknown as typeof globalThis.fetch;
    const exit = await runCli(
      ['leases', 'release', 'l-1', '--api', 'http://127.0.0.1:9'],
      cliDeps(io, fetch),
    );
    expect(exit).toBe(1);
    expect(calls).toBe(1);
  });
});

describe('a refused token', () => {
  it('is named by the variable it came from', async () => {
    const io = recordingIo();
    const fetch = (async () =>
      new Response(JSON.stringify({ error: 'unauthenticated', message: 'invalid credential' }), {
        status: 401,
      })) as unknown as typeof globalThis.fetch;
    const exit = await runCli(['proxies', 'list', '--api', 'http://127.0.0.1:9'], {
      ...cliDeps(io, fetch),
      tokens: {
        env: { PROXYPLANE_TOKEN: 'expired-token-0123456789' },
        localState: () => null,
        gcloudToken: () => null,
      },
    });
    expect(exit).toBe(1);
    expect(io.errLines[0]).toMatch(/^error: unauthenticated — the token in \$PROXYPLANE_TOKEN was refused/);
    expect(io.errLines.join('\n')).not.toContain('expired-token-0123456789');
  });
});

// A gcloud identity token lives an hour and was kept for the process: a long `fleet watch` sent it
// expired every round and died. A 401 to a gcloud token now asks gcloud again and resends once; any other
// token's 401 is final (nothing fresher to send), and a fresh gcloud token refused again is the answer.
describe('a 401 and where the token came from', () => {
  function client(tokens: { env: Record<string, string>; state?: Record<string, string>; minted: string[] }) {
    const sent: string[] = [];
    let gcloudCalls = 0;
    const fetch = (async (_url: string, init?: RequestInit) => {
      sent.push((init?.headers as Record<string, string> | undefined)?.authorization ?? '');
      return Response.json({ error: 'unauthenticated', message: 'invalid credential' }, { status: 401 });
    }) as unknown as typeof globalThis.fetch;
    const api = new ApiClient({
      baseUrl: 'http://127.0.0.1:9',
      fetch,
      tokens: {
        env: tokens.env,
        localState: () => (tokens.state ? { env: tokens.state } : null),
        gcloudToken: () => tokens.minted[gcloudCalls++] ?? null,
      },
    });
    return { api, sent, gcloudCalls: () => gcloudCalls };
  }

  it.each([
    ['$PROXYPLANE_TOKEN', { env: { PROXYPLANE_TOKEN: 'env-token-0123456789' } }],
    [
      'state.json',
      {
        env: {},
        state: { PROXYPLANE_API_URL: 'http://127.0.0.1:9', PROXYPLANE_ADMIN_TOKEN: 'state-token-0123456789' },
      },
    ],
  ])('a token from %s: its 401 is final, sent once, gcloud never asked', async (_from, t) => {
    const { api, sent, gcloudCalls } = client({ ...t, minted: ['gcloud-a', 'gcloud-b'] });
    await expect(api.call('GET', '/v1/proxies', { role: 'admin' })).rejects.toMatchObject({ status: 401 });
    expect(sent).toHaveLength(1);
    expect(gcloudCalls()).toBe(0);
  });

  it('a gcloud token: gcloud asked again and the request resent once with the fresh token', async () => {
    const { api, sent, gcloudCalls } = client({ env: {}, minted: ['gcloud-a', 'gcloud-b', 'gcloud-c'] });
    await expect(api.call('POST', '/v1/proxies', { role: 'admin', body: {} })).rejects.toMatchObject({
      status: 401,
      tokenSource: 'gcloud auth print-identity-token',
    });
    expect(sent).toEqual(['Bearer gcloud-a', 'Bearer gcloud-b']);
    expect(gcloudCalls()).toBe(2);
  });

  it('a gcloud token refreshed, then a short 503: waited out once like any first answer', async () => {
    const answers = [401, 503, 200];
    const sent: string[] = [];
    const fetch = (async (_url: string, init?: RequestInit) => {
      sent.push((init?.headers as Record<string, string> | undefined)?.authorization ?? '');
      const status = answers.shift()!;
      if (status === 200) return Response.json({ items: [] });
      return Response.json(
        { error: status === 401 ? 'unauthenticated' : 'unavailable', message: 'x' },
        { status, headers: status === 503 ? { 'retry-after': '0' } : {} },
      );
    }) as unknown as typeof globalThis.fetch;
    const minted = ['gcloud-a', 'gcloud-b'];
    const api = new ApiClient({
      baseUrl: 'http://127.0.0.1:9',
      fetch,
      tokens: { env: {}, localState: () => null, gcloudToken: () => minted.shift() ?? null },
    });
    await expect(api.call('GET', '/v1/proxies', { role: 'admin' })).resolves.toEqual({ items: [] });
    expect(sent).toEqual(['Bearer gcloud-a', 'Bearer gcloud-b', 'Bearer gcloud-b']);
  });
});

// Node's fetch refuses the ports the Fetch standard blocks (6000, 10080, …: "bad port") without sending
// anything: the CLI said "(no answer): is the plane running (npm start)…", for a plane that was running.
describe('an API on a port fetch refuses', () => {
  it.each([['6000'], ['10080']])(
    'port %s: says fetch refuses it and to use another, exit 1',
    async (port) => {
      const io = recordingIo();
      // The real fetch: its refusal comes before any connection, so nothing is sent anywhere.
      const exit = await runCli(
        ['jobs', 'list', '--api', `http://127.0.0.1:${port}`],
        cliDeps(io, globalThis.fetch),
      );
      expect(exit).toBe(1);
      expect(io.errLines[0]).toMatch(
        new RegExp(
          `^error: unreachable — cannot reach http://127\\.0\\.0\\.1:${port}: fetch refuses port ${port} `,
        ),
      );
      expect(io.errLines[0]).toContain('another port');
      expect(io.errLines[0]).not.toMatch(/no answer|is the plane running/);
    },
  );
});
