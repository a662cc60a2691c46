import { request } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it, vi } from 'vitest';
import { memoryLogger } from '../../../../shared/src/adapters/log/json-logger.js';
import { emptyStatus, type ProxyResource } from '../../../../shared/src/domain/proxy.js';
import { ManualClock } from '../../../../shared/src/ports/clock.js';
import { anyOf } from '../auth/authenticator.js';
import { staticTokenAuthenticator } from '../auth/static-tokens.js';
import { startApiServer } from '../server.js';
import { getWithBody } from '../testing/get-with-body.js';
import { ADMIN_TOKEN, harness } from '../testing/harness.js';
import { InMemoryFleetFeed } from './feed.js';
import { type FleetDeps, fleetApp } from './routes.js';
import { BUILD_COST_FACTOR } from './shared-view.js';

const NOW = new Date('2026-02-01T12:00:00Z');

function proxy(
  name: string,
  over: Partial<ProxyResource['status']> = {},
  attributes: Record<string, string> = {},
): ProxyResource {
  return {
    name,
    uid: '00000000-0000-4000-8000-000000000001',
    generation: 1,
    createdAt: new Date(NOW.getTime() - 60_000),
    deletionRequestedAt: null,
    spec: {
      mode: 'external',
      endpoint: { host: '127.0.0.9', port: 3128, protocol: 'http' },
      attributes,
      capacity: 4,
      gatewayPool: false,
      cordoned: false,
      healthCheck: {
        expectedStatus: 200,
        intervalSeconds: 30,
        timeoutSeconds: 5,
        successThreshold: 1,
        failureThreshold: 3,
      },
    },
    status: { ...emptyStatus(), ...over },
  };
}

function setup() {
  const feed = new InMemoryFleetFeed();
  const h = harness({ fleet: feed });
  return { feed, ...h };
}

/** The fleet app alone (its paths without /fleet), with the stream limits a test sets. */
function fleetAlone(feed: InMemoryFleetFeed, over: Partial<FleetDeps> = {}) {
  return fleetApp({
    feed,
    auth: anyOf([staticTokenAuthenticator([{ name: 'unit', token: ADMIN_TOKEN }])]),
    clock: new ManualClock(NOW),
    log: memoryLogger(),
    ...over,
  });
}
const adminHeader = { authorization: `Bearer ${ADMIN_TOKEN}` };

/** A feed whose views load only when `load()` is called, and that counts the views built from it. */
class SlowFeed extends InMemoryFleetFeed {
  builds = 0;
  waiting = false;
  load: () => void = () => {};
  private readonly loaded = new Promise<void>((resolve) => {
    this.load = resolve;
  });
  override async ready(): Promise<void> {
    this.waiting = true;
    await this.loaded;
  }
  override inputs() {
    this.builds++;
    return super.inputs();
  }
}

describe('the fleet page', () => {
  it('needs an admin credential: JSON 401 for the API, the login form for a browser', async () => {
    const { app } = setup();
    const json = await app.request('/fleet/api/state');
    expect(json.status).toBe(401);
    expect(await json.json()).toMatchObject({ error: 'unauthenticated' });
    const html = await app.request('/fleet', { headers: { accept: 'text/html' } });
    expect(html.status).toBe(401);
    expect(await html.text()).toContain('<form method="post" action="/fleet/login">');
    expect((await app.request('/fleet/events')).status).toBe(401);
  });

  it('turns ?token= into an HttpOnly cookie and drops it from the address; a bad one is refused', async () => {
    const { app } = setup();
    const res = await app.request(`/fleet?token=${ADMIN_TOKEN}`);
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe('/fleet');
    const cookie = res.headers.get('set-cookie')!;
    expect(cookie).toMatch(/^proxyplane_fleet=[^;]+; Max-Age=\d+; Path=\/fleet; HttpOnly; SameSite=Strict$/);
    const page = await app.request('/fleet', { headers: { cookie: cookie.split(';')[0]! } });
    expect(page.status).toBe(200);
    expect(await page.text()).not.toContain(ADMIN_TOKEN);
    expect((await app.request('/fleet?token=wrong-token-wrong-token')).status).toBe(401);
  });

  it('drops ?token= from a path with encoded line breaks too: the path kept encoded, not a 500', async () => {
    const { app } = setup();
    const res = await app.request(`/fleet/a%0D%0Ab?token=${ADMIN_TOKEN}`);
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe('/fleet/a%0D%0Ab');
  });

  it('refuses ?token= where the platform logs request URLs (Cloud Run), pointing to the form', async () => {
    // Cloud Run's request log keeps every URL whole, query string included: an admin token in the address
    // would sit in Cloud Logging. The page's own request log drops the query, the platform's does not.
    const feed = new InMemoryFleetFeed();
    const { app } = harness({ fleet: feed, fleetTokenInUrl: false });
    const res = await app.request(`/fleet?token=${ADMIN_TOKEN}`, { headers: { accept: 'text/html' } });
    expect(res.status).toBe(400);
    expect(res.headers.get('set-cookie')).toBeNull();
    const html = await res.text();
    expect(html).toContain('<form method="post" action="/fleet/login">');
    expect(html).toMatch(/request log/);
    expect(html).not.toContain(ADMIN_TOKEN);
    // The form and a Bearer header still work.
    const form = await app.request('/fleet/login', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: ADMIN_TOKEN }).toString(),
    });
    expect(form.status).toBe(303);
    expect(
      (await app.request('/fleet/api/state', { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).status,
    ).toBe(200);
  });

  it('refuses ?token= on Cloud Run on the login form and the assets too, not only on the page', async () => {
    // They answered 200, and the token was in Cloud Logging all the same (docs/cli.md says it is refused).
    const { app } = harness({ fleet: new InMemoryFleetFeed(), fleetTokenInUrl: false });
    for (const path of ['/fleet/login', '/fleet/assets/fleet.js', '/fleet/assets/fleet.css']) {
      const res = await app.request(`${path}?token=${ADMIN_TOKEN}`, { headers: { accept: 'text/html' } });
      expect(res.status, path).toBe(400);
      expect(res.headers.get('set-cookie')).toBeNull();
      const html = await res.text();
      expect(html).toMatch(/request log/);
      expect(html).not.toContain(ADMIN_TOKEN);
    }
    const post = await app.request(`/fleet/login?token=${ADMIN_TOKEN}`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'same-origin' },
      body: new URLSearchParams({ token: ADMIN_TOKEN }).toString(),
    });
    expect(post.status).toBe(400);
    expect(post.headers.get('set-cookie')).toBeNull();
    // Without a token in the address they are served as before.
    expect((await app.request('/fleet/login')).status).toBe(200);
    expect((await app.request('/fleet/assets/fleet.js')).status).toBe(200);
  });

  // A JSON client (`fleet watch`, a script) is answered by Accept like every other refusal of the page.
  it.each([
    ['no Accept', {}],
    ['Accept: application/json', { accept: 'application/json' }],
  ])('refuses ?token= on Cloud Run to a JSON client with 400 invalid_request (%s)', async (_n, headers) => {
    const { app } = harness({ fleet: new InMemoryFleetFeed(), fleetTokenInUrl: false });
    for (const path of ['/fleet', '/fleet/api/state']) {
      const res = await app.request(`${path}?token=${ADMIN_TOKEN}`, { headers });
      expect(res.status).toBe(400);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      expect(res.headers.get('set-cookie')).toBeNull();
      const body = (await res.json()) as { error: string; message: string };
      expect(body).toMatchObject({ error: 'invalid_request' });
      expect(body.message).toMatch(/request log/);
      expect(body.message).toContain('/fleet/login');
      expect(body.message).not.toContain(ADMIN_TOKEN);
    }
  });

  // A link on another site carrying its own token would sign the admin in as that token (login CSRF),
  // as a cross-site POST /fleet/login would; the link `npm start` prints, opened from the terminal, is
  // Sec-Fetch-Site: none.
  it.each<[string, Record<string, string>, number]>([
    ['Sec-Fetch-Site cross-site', { 'sec-fetch-site': 'cross-site' }, 403],
    ['Sec-Fetch-Site same-site', { 'sec-fetch-site': 'same-site' }, 403],
    ['a foreign Origin alone', { origin: 'https://evil.example' }, 403],
    ['Sec-Fetch-Site none (a link from the terminal, typed)', { 'sec-fetch-site': 'none' }, 303],
    ['Sec-Fetch-Site same-origin', { 'sec-fetch-site': 'same-origin' }, 303],
    ['neither header (curl, an old browser)', {}, 303],
  ])('?token= with %s', async (_n, headers, status) => {
    const { app } = setup();
    const get = (accept: string) =>
      app.request(`http://localhost/fleet?token=${ADMIN_TOKEN}`, {
        headers: { host: 'localhost', accept, ...headers },
      });
    const html = await get('text/html');
    const json = await get('application/json');
    for (const res of [html, json]) expect(res.status).toBe(status);
    if (status === 403) {
      for (const res of [html, json]) expect(res.headers.get('set-cookie')).toBeNull();
      const page = await html.text();
      expect(page).toContain('A sign-in from another site is refused');
      expect(page).toContain('<form method="post" action="/fleet/login">');
      expect(await json.json()).toMatchObject({ error: 'forbidden' });
    } else {
      expect(html.headers.get('location')).toBe('/fleet');
      expect(html.headers.get('set-cookie')).toContain('proxyplane_fleet=');
    }
  });

  it('signs in through the form', async () => {
    const { app } = setup();
    const form = (token: string) =>
      app.request('/fleet/login', {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ token }).toString(),
      });
    const ok = await form(ADMIN_TOKEN);
    expect(ok.status).toBe(303);
    expect(ok.headers.get('set-cookie')).toContain('HttpOnly');
    expect((await form('nope-nope-nope-nope')).status).toBe(401);
  });

  // A page anywhere could post to /fleet/logout (a forced sign-out: Set-Cookie is honoured on a cross-site
  // top-level navigation) or to /fleet/login with its own token. What a browser says of the request's
  // site decides; a request with neither header is no browser's, so no forgery.
  it.each<[string, Record<string, string>, number, number]>([
    ['Sec-Fetch-Site cross-site', { 'sec-fetch-site': 'cross-site' }, 403, 403],
    [
      'Sec-Fetch-Site same-site',
      { 'sec-fetch-site': 'same-site', origin: 'https://other.localhost' },
      403,
      403,
    ],
    ['a foreign Origin alone', { origin: 'https://evil.example' }, 403, 403],
    ['an opaque Origin ("null")', { origin: 'null' }, 403, 403],
    ['Sec-Fetch-Site same-origin', { 'sec-fetch-site': 'same-origin', origin: 'http://localhost' }, 303, 303],
    ['Sec-Fetch-Site none (typed, bookmarked)', { 'sec-fetch-site': 'none' }, 303, 303],
    ['our own Origin alone', { origin: 'http://localhost' }, 303, 303],
    ['neither header (curl)', {}, 303, 303],
  ])('sign-in and sign-out with %s', async (_n, headers, login, logout) => {
    const { app } = setup();
    const post = (path: string, body?: string) =>
      app.request(`http://localhost${path}`, {
        method: 'POST',
        headers: { host: 'localhost', 'content-type': 'application/x-www-form-urlencoded', ...headers },
        body,
      });
    const signIn = await post('/fleet/login', new URLSearchParams({ token: ADMIN_TOKEN }).toString());
    expect(signIn.status).toBe(login);
    const signOut = await post('/fleet/logout');
    expect(signOut.status).toBe(logout);
    for (const res of [signIn, signOut]) {
      if (res.status === 403) {
        expect(res.headers.get('set-cookie')).toBeNull();
        expect(await res.json()).toMatchObject({ error: 'forbidden' });
      } else expect(res.headers.get('set-cookie')).toContain('proxyplane_fleet=');
    }
  });

  it('shows why a valid credential that may not see the page is refused (403), and sets no cookie', async () => {
    const feed = new InMemoryFleetFeed();
    const { app } = harness({
      fleet: feed,
      auth: {
        description: 'test',
        authenticate: async (token) =>
          token === 'eyJ.not-an.admin'
            ? { ok: false, code: 'forbidden', reason: 'ops@example.com is not an admin' }
            : token === 'eyJ.certs.down'
              ? { ok: false, code: 'unavailable', reason: 'cannot fetch Google signing certificates' }
              : { ok: false, code: 'unauthenticated', reason: 'invalid credential' },
      },
    });
    const form = (token: string) =>
      app.request('/fleet/login', {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ token }).toString(),
      });
    const link = await app.request('/fleet?token=eyJ.not-an.admin', { headers: { accept: 'text/html' } });
    for (const res of [await form('eyJ.not-an.admin'), link]) {
      expect(res.status).toBe(403);
      expect(res.headers.get('set-cookie')).toBeNull();
      const page = await res.text();
      expect(page).toContain('That token is refused: ops@example.com is not an admin.');
      expect(page).toContain('<form method="post" action="/fleet/login">');
    }
    const down = await form('eyJ.certs.down');
    expect(down.status).toBe(503);
    expect(await down.text()).toContain('cannot be checked right now');
    const unknown = await form('nope-nope-nope-nope');
    expect(unknown.status).toBe(401);
    expect(await unknown.text()).toContain('That token was not accepted.');
  });

  // A checked ?token= that is refused answers by Accept like every other refusal of the page: the form
  // answered a JSON client (`fleet watch`, a script) in HTML, where the same token as a Bearer header, the
  // cookie, and the unchecked refusals (Cloud Run, cross-site) answer it the API's error body.
  it.each<[string, string, number, string]>([
    ['an unknown token', 'nope-nope-nope-nope', 401, 'unauthenticated'],
    ['a credential that may not see the page', 'eyJ.not-an.admin', 403, 'forbidden'],
    ['a credential that cannot be checked now', 'eyJ.certs.down', 503, 'unavailable'],
  ])(
    'a refused ?token= (%s): JSON to a JSON client, the form to a browser',
    async (_n, token, status, code) => {
      const { app } = harness({
        fleet: new InMemoryFleetFeed(),
        auth: {
          description: 'test',
          authenticate: async (t) =>
            t === 'eyJ.not-an.admin'
              ? { ok: false, code: 'forbidden', reason: 'ops@example.com is not an admin' }
              : t === 'eyJ.certs.down'
                ? { ok: false, code: 'unavailable', reason: 'cannot fetch Google signing certificates' }
                : { ok: false, code: 'unauthenticated', reason: 'invalid credential' },
        },
      });
      for (const headers of [{ accept: 'application/json' }, {}] as Array<Record<string, string>>) {
        const res = await app.request(`/fleet/api/state?token=${token}`, { headers });
        expect(res.status).toBe(status);
        expect(res.headers.get('content-type')).toMatch(/^application\/json/);
        expect(res.headers.get('set-cookie')).toBeNull();
        expect(res.headers.get('retry-after')).toBe(status === 503 ? '5' : null);
        expect(await res.json()).toMatchObject({ error: code });
      }
      const browser = await app.request(`/fleet?token=${token}`, {
        headers: { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' },
      });
      expect(browser.status).toBe(status);
      expect(browser.headers.get('content-type')).toMatch(/^text\/html/);
      expect(browser.headers.get('set-cookie')).toBeNull();
      expect(await browser.text()).toContain('<form method="post" action="/fleet/login">');
    },
  );

  it.each([
    ['multipart with a body that is not multipart', 'multipart/form-data; boundary=q', 'garbage', 415],
    ['multipart without a boundary', 'multipart/form-data', `token=${ADMIN_TOKEN}`, 415],
    ['JSON', 'application/json', JSON.stringify({ token: ADMIN_TOKEN }), 415],
    ['no Content-Type', null, `token=${ADMIN_TOKEN}`, 415],
    ['a form without a token', 'application/x-www-form-urlencoded', 'other=1', 401],
    ['a form that is not key=value', 'application/x-www-form-urlencoded', '%%%&&==', 401],
  ])('refuses a sign-in with %s as a 4xx, never a 500', async (_label, type, body, status) => {
    const { app, log } = setup();
    const res = await app.request('/fleet/login', {
      method: 'POST',
      headers: type ? { 'content-type': type } : {},
      body,
    });
    expect(res.status).toBe(status);
    if (status === 415) expect(await res.json()).toMatchObject({ error: 'unsupported_media_type' });
    expect(res.headers.get('set-cookie')).toBeNull();
    expect(log.lines.filter((l) => l.severity === 'ERROR')).toEqual([]);
  });

  it('renders every proxy, escaping whatever an API caller put in names and attributes', async () => {
    const { app, feed, auth } = setup();
    feed.proxies.set('p-1', proxy('p-1', { phase: 'Ready' }, { note: '<script>alert(1)</script>' }));
    feed.proxies.set('p-2', proxy('p-2', { phase: 'Unhealthy' }));
    feed.proxies.set('p-3', proxy('p-3', { phase: 'Ready', unreachableRoutes: ['shop', '<b>'] }));
    const html = await (await app.request('/fleet', { headers: auth })).text();
    // The routes a target check keeps it out of, beside its gateway owner.
    expect(html).toContain('not for shop, &lt;b&gt;</span>');
    expect(html).toContain('<tr data-name="p-1" data-phase="Ready">');
    expect(html).toContain('<tr data-name="p-2" data-phase="Unhealthy">');
    expect(html).not.toContain('<script>alert(1)');
    expect(html).toContain('note=&lt;script&gt;alert(1)&lt;/script&gt;');
    // No second copy of the view as JSON: the script reads the stream's first event, never the page's
    // data (at 10,000 proxies it was 4.3 MB of an 11.9 MB page, read by nothing).
    expect(html).not.toContain('id="initial"');
  });

  it('serves the state and a detail as JSON, and 404 for an unknown proxy', async () => {
    const { app, feed, auth } = setup();
    feed.proxies.set('p-1', proxy('p-1', { phase: 'Ready' }));
    const state = (await (await app.request('/fleet/api/state', { headers: auth })).json()) as {
      rows: Array<{ name: string }>;
    };
    expect(state.rows.map((r) => r.name)).toEqual(['p-1']);
    const detail = await app.request('/fleet/api/proxies/p-1', { headers: auth });
    expect(await detail.json()).toMatchObject({ row: { name: 'p-1' }, events: [{ kind: 'created' }] });
    expect((await app.request('/fleet/api/proxies/nope', { headers: auth })).status).toBe(404);
  });

  it('streams the view at once and again after a change (SSE), and lets go of the feed on disconnect', async () => {
    const { app, feed, auth } = setup();
    feed.proxies.set('p-1', proxy('p-1', { phase: 'Ready' }));
    const abort = new AbortController();
    const res = await app.request('/fleet/events', { headers: auth, signal: abort.signal });
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let text = '';
    const until = async (pattern: RegExp) => {
      while (!pattern.test(text)) text += decoder.decode((await reader.read()).value);
    };
    await until(/"phase":"Ready"/);
    expect(text).toMatch(/^event: fleet\ndata: \{/);
    feed.proxies.set('p-1', proxy('p-1', { phase: 'Unhealthy' }));
    feed.changed();
    await until(/"phase":"Unhealthy"/);
    expect(feed.subscribers).toBe(1);
    abort.abort();
    await reader.cancel();
    await expect.poll(() => feed.subscribers).toBe(0);
  });

  it('builds one view per change for all its streams, not one per stream', async () => {
    // At 10,000 proxies a view is some 5–8 MB of JSON and 100–200 ms of the event loop: built per stream,
    // a few open tabs under lease traffic held the instance that serves the leases.
    const feed = new SlowFeed();
    feed.load();
    feed.proxies.set('p-1', proxy('p-1', { phase: 'Ready' }));
    const app = fleetAlone(feed, { debounceMs: 200, refreshMs: 60_000 });
    const aborts = Array.from({ length: 5 }, () => new AbortController());
    const readers = await Promise.all(
      aborts.map(async (a) => {
        const res = await app.request('/events', { headers: adminHeader, signal: a.signal });
        return { reader: res.body!.getReader(), text: '' };
      }),
    );
    const decoder = new TextDecoder();
    const allSee = (pattern: RegExp) =>
      Promise.all(
        readers.map(async (r) => {
          while (!pattern.test(r.text)) r.text += decoder.decode((await r.reader.read()).value);
        }),
      );
    await allSee(/"phase":"Ready"/);
    const before = feed.builds;
    feed.proxies.set('p-1', proxy('p-1', { phase: 'Unhealthy' }));
    feed.changed();
    await allSee(/"phase":"Unhealthy"/);
    expect(feed.builds - before).toBe(1);
    for (const a of aborts) a.abort();
    await Promise.all(readers.map((r) => r.reader.cancel()));
    await expect.poll(() => feed.subscribers).toBe(0);
  });

  it("rebuilds the streams' view no sooner than four times its last cost, and still sends the last change", async () => {
    // At 10,000 proxies a build and its JSON cost 200–600 ms: rebuilt 250 ms after every lease write, it
    // held the instance that serves the leases. Here each build costs COST on the injected monotonic clock
    // while changes come every 20 ms for 3 s; the timers are fake, so nothing depends on this box's speed.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] });
    const abort = new AbortController();
    try {
      const COST = 100;
      const base = Date.now();
      let spent = 0; // what the builds cost, on top of the (fake) time that passed
      const monotonicNow = () => Date.now() - base + spent;
      const starts: number[] = [];
      class CostlyFeed extends InMemoryFleetFeed {
        override inputs() {
          starts.push(monotonicNow());
          spent += COST;
          return super.inputs();
        }
      }
      const feed = new CostlyFeed();
      for (let i = 0; i < 200; i++) feed.proxies.set(`p-${i}`, proxy(`p-${i}`, { phase: 'Ready' }));
      // No refresh within the test: the last change must go out on the timer its stream re-arms for when
      // the view is due, not with a refresh that would send it anyway.
      const app = fleetAlone(feed, { debounceMs: 50, refreshMs: 60_000, monotonicNow });
      const res = await app.request('/events', { headers: adminHeader, signal: abort.signal });
      const reader = res.body!.getReader();
      const decoder = new TextDecoder();
      let text = '';
      const reading = (async () => {
        for (;;) {
          const { value, done } = await reader.read();
          if (done) return;
          text += decoder.decode(value);
        }
      })();
      const lastEvent = () => {
        const events = text.split('\n\n').filter((e) => e.startsWith('event: fleet'));
        const data = events.at(-1)!.match(/^data: (.*)$/m)![1]!;
        return JSON.parse(data) as { rows: Array<{ name: string; attributes: Record<string, string> }> };
      };
      const setRound = (round: string) => {
        feed.proxies.set('p-0', proxy('p-0', { phase: 'Ready' }, { round }));
        feed.changed();
      };
      for (let i = 0; i < 150; i++) {
        setRound(String(i));
        await vi.advanceTimersByTimeAsync(20);
      }
      setRound('last');
      await vi.advanceTimersByTimeAsync(3_000);
      // Every build waited at least K times the last one's cost after it ended.
      const gaps = starts.slice(1).map((s, i) => s - (starts[i]! + COST));
      expect(Math.min(...gaps)).toBeGreaterThanOrEqual(BUILD_COST_FACTOR * COST);
      // Changes kept coming through (3 s of them at ≥ 5 × COST a build), none lost: the last one is sent.
      expect(starts.length).toBeGreaterThanOrEqual(5);
      expect(starts.length).toBeLessThanOrEqual(Math.ceil(6_000 / ((BUILD_COST_FACTOR + 1) * COST)) + 1);
      expect(lastEvent().rows.find((r) => r.name === 'p-0')!.attributes).toEqual({ round: 'last' });
      abort.abort();
      await reader.cancel();
      await reading;
    } finally {
      abort.abort();
      vi.useRealTimers();
    }
  });

  /**
   * A slow client (fake timers; debounce 50, refresh 1 000): A1 and A2 go out at t=850 and 950 unread, so
   * A2's write stays in flight; B changes at t=980 (its timer due at 1030) and the refresh at 1000 finds the
   * write in flight. The client reads A1 and A2 at `readAt`, ending the write; returns when B went out.
   */
  async function changeBehindAWrite(readAt: number): Promise<number> {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] });
    const abort = new AbortController();
    try {
      const base = Date.now();
      const at = () => Date.now() - base;
      const feed = new InMemoryFleetFeed();
      const setRound = (round: string) => {
        feed.proxies.set('p-0', proxy('p-0', { phase: 'Ready' }, { round }));
        feed.changed();
      };
      setRound('0');
      const app = fleetAlone(feed, { debounceMs: 50, refreshMs: 1_000, monotonicNow: at });
      const res = await app.request('/events', { headers: adminHeader, signal: abort.signal });
      const reader = res.body!.getReader();
      const decoder = new TextDecoder();
      // The client reads one chunk when asked: until then the stream's write waits (a slow client).
      const readOne = async () => {
        const { value } = await reader.read();
        return { at: at(), text: decoder.decode(value) };
      };
      expect((await readOne()).text).toContain('"round":"0"');
      await vi.advanceTimersByTimeAsync(800);
      setRound('A1'); // sent at t=850, not read: it fills the response's one-chunk buffer
      await vi.advanceTimersByTimeAsync(100);
      setRound('A2'); // sent at t=950, not read: the write stays in flight
      await vi.advanceTimersByTimeAsync(80);
      setRound('B'); // its timer is due at t=1030
      await vi.advanceTimersByTimeAsync(readAt - 980); // the refresh at t=1000 finds the write in flight
      expect((await readOne()).text).toContain('"round":"A1"'); // the write ends
      expect((await readOne()).text).toContain('"round":"A2"');
      const b = readOne();
      await vi.advanceTimersByTimeAsync(1_100);
      const sent = await b;
      expect(sent.text).toContain('"round":"B"');
      abort.abort();
      await reader.cancel();
      return sent.at;
    } finally {
      abort.abort();
      vi.useRealTimers();
    }
  }

  it('sends a change made behind a write in flight once the write ends, not at the next refresh', async () => {
    // A refresh that found a write in flight skipped its send, but had cleared the timer of a change made
    // meanwhile: the write ended (t=1010) before that timer was due, and the change waited for the next
    // refresh (5 s). The skipped refresh is now owed a send when the write ends, which takes B's place.
    expect(await changeBehindAWrite(1_010)).toBe(1_010);
  });

  it('sends a change whose timer fired during a write when the write ends, not at the next refresh', async () => {
    // At 10,000 proxies an event is 5–8 MB and a write to a slow client outlasts the debounce: B's timer
    // fired at t=1030 during the write and its send was skipped, with nothing left to send B until the
    // refresh at t=2000.
    expect(await changeBehindAWrite(1_040)).toBe(1_040);
  });

  it('serves the state from the view the streams share: polls within the gap build it once', async () => {
    // `fleet watch` polls the state every second: a build and its JSON per poll cost 200–600 ms of the loop
    // at 10,000 proxies, on the instance that serves the leases.
    const feed = new SlowFeed();
    feed.load();
    feed.proxies.set('p-1', proxy('p-1', { phase: 'Ready' }));
    let now = 0;
    const app = fleetAlone(feed, { debounceMs: 200, refreshMs: 60_000, monotonicNow: () => now });
    const poll = async () => {
      const res = await app.request('/api/state', { headers: adminHeader });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('application/json');
      expect(res.headers.get('cache-control')).toBe('no-store');
      return res.text();
    };
    const first = await poll();
    // The body is JSON.stringify(view), as c.json sent it.
    expect(first).toBe(JSON.stringify(JSON.parse(first)));
    expect(Object.keys(JSON.parse(first))).toEqual(['generatedAt', 'rows', 'phases', 'jobs']);
    now = 100;
    expect(await poll()).toBe(first);
    expect(feed.builds).toBe(1);
    // Changed with no stream open: a poll never gets a view older than the gap.
    feed.proxies.set('p-1', proxy('p-1', { phase: 'Unhealthy' }));
    feed.changed();
    now = 199;
    expect(await poll()).toContain('"phase":"Ready"');
    now = 200;
    expect(await poll()).toContain('"phase":"Unhealthy"');
    expect(feed.builds).toBe(2);
    // The view polls alone built has a timer to let it go once older than the gap, which this clock, held
    // still, never lets happen: it would re-arm after the test. A stream that opens and closes drops the
    // view and its timer (the last stream gone), as it would on a running instance.
    const abort = new AbortController();
    const stream = await app.request('/events', { headers: adminHeader, signal: abort.signal });
    abort.abort();
    await stream.body!.cancel();
    await expect.poll(() => feed.subscribers).toBe(0);
  });

  it('a stream opened after a poll built the view sends a change made in between, within the gap', async () => {
    // No stream counted the feed's changes while the poll's view was held: the stream must not take it
    // as current, or the change waits for the refresh (a minute here). The monotonic clock is the test's:
    // held at the poll's build until the stream's first event is read, so that event is the poll's view
    // however slow this box is, then moved to the end of the gap.
    const feed = new SlowFeed();
    feed.load();
    feed.proxies.set('p-1', proxy('p-1', { phase: 'Ready' }));
    let now = 0;
    const app = fleetAlone(feed, { debounceMs: 200, refreshMs: 60_000, monotonicNow: () => now });
    expect(await (await app.request('/api/state', { headers: adminHeader })).text()).toContain('"Ready"');
    feed.proxies.set('p-1', proxy('p-1', { phase: 'Unhealthy' }));
    feed.changed();
    const abort = new AbortController();
    const res = await app.request('/events', { headers: adminHeader, signal: abort.signal });
    const reader = res.body!.getReader();
    let text = '';
    const readUntil = async (pattern: RegExp) => {
      while (!pattern.test(text)) {
        const { value, done } = await reader.read();
        if (done) return;
        text += new TextDecoder().decode(value);
      }
    };
    await readUntil(/"phase":"/);
    expect(text).toContain('"phase":"Ready"'); // the poll's view first, at once
    expect(feed.builds).toBe(1);
    now = 200;
    await Promise.race([readUntil(/"phase":"Unhealthy"/), sleep(2_000)]);
    expect(text).toContain('"phase":"Unhealthy"');
    abort.abort();
    await reader.cancel();
    await expect.poll(() => feed.subscribers).toBe(0);
  });

  it("serialises the rows once per build: the event's data and the key that skips an unchanged view", async () => {
    const feed = new SlowFeed();
    feed.load();
    let serialised = 0;
    // Serialising a row's attributes calls this; buildRow copies it with the other attributes.
    const counting = {
      toJSON: () => {
        serialised++;
        return { zone: 'a' };
      },
    } as unknown as Record<string, string>;
    feed.proxies.set('p-1', proxy('p-1', { phase: 'Ready' }, counting));
    const app = fleetAlone(feed, { debounceMs: 1, refreshMs: 60_000 });
    const abort = new AbortController();
    const res = await app.request('/events', { headers: adminHeader, signal: abort.signal });
    const reader = res.body!.getReader();
    let text = '';
    while (!/"phase":"Ready"/.test(text)) text += new TextDecoder().decode((await reader.read()).value);
    expect(feed.builds).toBe(1);
    expect(serialised).toBe(1);
    // The data is the view exactly as JSON.stringify gives it, generatedAt first.
    const data = text.match(/^data: (.*)$/m)![1]!;
    expect(data).toBe(JSON.stringify(JSON.parse(data)));
    expect(Object.keys(JSON.parse(data))).toEqual(['generatedAt', 'rows', 'phases', 'jobs']);
    expect(JSON.parse(data).rows[0].attributes).toEqual({ zone: 'a' });
    abort.abort();
    await reader.cancel();
    await expect.poll(() => feed.subscribers).toBe(0);
  });

  it('a stream opened after the last one closed starts from a fresh view, not the one they shared', async () => {
    const feed = new SlowFeed();
    feed.load();
    feed.proxies.set('p-1', proxy('p-1', { phase: 'Ready' }));
    const app = fleetAlone(feed, { debounceMs: 5_000, refreshMs: 60_000 });
    const open = async () => {
      const abort = new AbortController();
      const res = await app.request('/events', { headers: adminHeader, signal: abort.signal });
      const reader = res.body!.getReader();
      let text = '';
      while (!/"phase":"/.test(text)) text += new TextDecoder().decode((await reader.read()).value);
      abort.abort();
      await reader.cancel();
      await expect.poll(() => feed.subscribers).toBe(0);
      return text;
    };
    expect(await open()).toContain('"phase":"Ready"');
    // Changed while no stream listened (the feed keeps its listeners a minute), well within the debounce.
    feed.proxies.set('p-1', proxy('p-1', { phase: 'Unhealthy' }));
    feed.changed();
    expect(await open()).toContain('"phase":"Unhealthy"');
  });

  // Hono answers a HEAD with the GET's response, its body dropped unread: the stream it started was never
  // read nor cancelled, and held its slot, its subscription and its timers until the instance restarted.
  it('answers a HEAD of the stream with its headers only: no slot, no subscription held', async () => {
    const feed = new InMemoryFleetFeed();
    const app = fleetAlone(feed, { maxStreams: 1 });
    const head = await app.request('/events', { method: 'HEAD', headers: adminHeader });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-type')).toContain('text/event-stream');
    expect(feed.subscribers).toBe(0);
    const abort = new AbortController();
    const get = await app.request('/events', { headers: adminHeader, signal: abort.signal });
    expect(get.status).toBe(200);
    abort.abort();
    await get.body!.cancel();
    await expect.poll(() => feed.subscribers).toBe(0);
  });

  it('holds nothing for a client that left while the views loaded, and counts those waiting', async () => {
    const feed = new SlowFeed();
    const app = fleetAlone(feed, { maxStreams: 1 });
    const abort = new AbortController();
    const left = app.request('/events', { headers: adminHeader, signal: abort.signal });
    await expect.poll(() => feed.waiting).toBe(true);
    // The one slot is taken by the request waiting for the views.
    expect((await app.request('/events', { headers: adminHeader })).status).toBe(503);
    abort.abort();
    feed.load();
    expect((await left).status).toBe(204);
    expect(feed.subscribers).toBe(0);
    const next = new AbortController();
    const get = await app.request('/events', { headers: adminHeader, signal: next.signal });
    expect(get.status).toBe(200);
    next.abort();
    await get.body!.cancel();
    await expect.poll(() => feed.subscribers).toBe(0);
  });

  it('builds no view behind a write its client does not read: one write at a time', async () => {
    const feed = new SlowFeed();
    feed.load();
    const app = fleetAlone(feed, { debounceMs: 1, refreshMs: 2 });
    const abort = new AbortController();
    const res = await app.request('/events', { headers: adminHeader, signal: abort.signal });
    expect(res.status).toBe(200);
    // Nobody reads: once the stream's buffer is full a write waits, and changes and refreshes meanwhile
    // build and queue nothing.
    const changes = async (n: number) => {
      for (let i = 0; i < n; i++) {
        feed.proxies.set('p-1', proxy('p-1', { phase: i % 2 ? 'Ready' : 'Unhealthy' }));
        feed.changed();
        await sleep(5);
      }
    };
    await changes(10);
    const settled = feed.builds;
    expect(settled).toBeLessThanOrEqual(3);
    await changes(30);
    expect(feed.builds).toBe(settled);
    abort.abort();
    await expect.poll(() => feed.subscribers).toBe(0);
  });

  it('answers 503 unavailable with Retry-After while its views cannot be loaded, on every route', async () => {
    const { feed, app } = setup();
    feed.ready = () => Promise.reject(new Error('fleet views not loaded within 15000 ms'));
    for (const path of ['/fleet', '/fleet/api/state', '/fleet/api/proxies/p1', '/fleet/events']) {
      const res = await app.request(path, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
      expect(res.status, path).toBe(503);
      expect(res.headers.get('retry-after'), path).toBe('2');
      expect(await res.json()).toMatchObject({ error: 'unavailable' });
    }
  });
});

describe('credentials before the body (docs/api.md § Authentication)', () => {
  // Only POST /fleet/login carries its credential in the body; on every other route of the page a caller
  // without one is 401 whatever it sends, and its body is never read (the API's 64 KiB limit stood in front
  // of the page's own auth, so such a caller got 413 after up to 64 KiB were read).
  const send = (port: number, method: string, path: string, headers: Record<string, string>, body: Buffer) =>
    new Promise<number>((resolve, reject) => {
      const req = request(
        {
          host: '127.0.0.1',
          port,
          method,
          path,
          headers: { ...headers, 'content-length': String(body.length) },
        },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('error', reject);
      req.end(body);
    });

  it.each([
    ['GET', '/fleet/api/state'],
    ['GET', '/fleet/events'],
    ['GET', '/fleet'],
  ])('%s %s with a 70 KB body and no credential: 401, not 413', async (method, path) => {
    const { deps } = setup();
    const api = await startApiServer({ deps });
    try {
      const body = Buffer.alloc(70_000, 'x');
      expect(await send(api.port, method, path, {}, body)).toBe(401);
      expect(
        await send(api.port, method, path, { authorization: 'Bearer wrong-token-wrong-token' }, body),
      ).toBe(401);
    } finally {
      await api.close();
    }
  });
});

describe('fleet page: a body where none is taken (docs/api.md § Errors)', () => {
  // Sent over a socket: a Fetch Request cannot carry a GET body, a client on the wire can.
  const get = (port: number, path: string, body: string) =>
    getWithBody({ port, path, token: ADMIN_TOKEN, body });

  it.each([
    ['/fleet/api/state'],
    ['/fleet/api/proxies/p1'],
    ['/fleet'],
    ['/fleet/proxies/p1'],
    ['/fleet/events'],
  ])('GET %s with an admin token and a body: 400 unexpected_body; over 1 KiB, 413', async (path) => {
    const { deps } = setup();
    const api = await startApiServer({ deps });
    try {
      const small = await get(api.port, path, '{"force":true}');
      expect(small.status).toBe(400);
      expect(JSON.parse(small.text)).toMatchObject({
        error: 'invalid_request',
        issues: [{ code: 'unexpected_body' }],
      });
      const big = await get(api.port, path, 'x'.repeat(2048));
      expect(big.status).toBe(413);
      expect(JSON.parse(big.text)).toMatchObject({ error: 'payload_too_large' });
    } finally {
      await api.close();
    }
  });

  it('the login form still takes its body', async () => {
    const { app } = setup();
    const res = await app.request('/fleet/login', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `token=${ADMIN_TOKEN}`,
      redirect: 'manual',
    });
    expect(res.status).toBe(303);
  });
});

describe('fleet page: security headers', () => {
  it('runs only its own script and style, talks only to its origin, and is never framed', async () => {
    const { app } = setup();
    for (const path of ['/fleet/login', `/fleet?token=${ADMIN_TOKEN}`, '/fleet/assets/fleet.js']) {
      const res = await app.request(path);
      const csp = res.headers.get('content-security-policy') ?? '';
      expect(csp, path).toContain("default-src 'none'");
      expect(csp, path).toContain("script-src 'self'");
      expect(csp, path).toContain("frame-ancestors 'none'");
      expect(csp, path).not.toContain('unsafe-inline');
      expect(res.headers.get('x-frame-options'), path).toBe('DENY');
      expect(res.headers.get('x-content-type-options'), path).toBe('nosniff');
      expect(res.headers.get('referrer-policy'), path).toBe('same-origin');
    }
  });

  it('serves no inline script or style the policy would block', async () => {
    const { app } = setup();
    const res = await app.request(`/fleet?token=${ADMIN_TOKEN}`, { redirect: 'manual' });
    const cookie = res.headers.get('set-cookie')?.split(';')[0] ?? '';
    const html = await (await app.request('/fleet', { headers: { cookie } })).text();
    expect(html).toContain('<script src="/fleet/assets/fleet.js"');
    // Only the data block may be inline: a script of type application/json is never run.
    for (const m of html.matchAll(/<script(?![^>]*\bsrc=)([^>]*)>/g))
      expect(m[1]).toContain('application/json');
    expect(html).not.toMatch(/\sstyle=|<style|\son[a-z]+=/i);
  });
});
