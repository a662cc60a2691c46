// Every status code and body of the seed's §7 discovery + lease API, against the Firestore emulator with
// the real adapters, driven through the service's whole middleware chain (createApp) by app.request()
// with a manual clock.
import { Firestore, Timestamp } from '@google-cloud/firestore';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { LeaseApiRuntime } from '../../functions/api/src/leases/wiring.js';
import { LEASE_COLLECTIONS } from '../../shared/src/adapters/firestore/lease-collections.js';
import { LeaseClient } from '../../shared/src/client/index.js';
import type { ProxyResource } from '../../shared/src/domain/proxy.js';
import { ManualClock } from '../../shared/src/ports/clock.js';
import { COOLDOWN_SITES_PER_LEASE, LeaseStoreError } from '../../shared/src/ports/lease-store.js';
import { SecretAccessError, type SecretReader } from '../../shared/src/ports/secrets.js';
import { missingContractFields } from '../../shared/src/testing/log-contract.js';
import { clearProject, testProjectId } from '../support/emulators.js';
import { ADMIN_TOKEN, leaseTestApp, type ProxyOptions, proxy, writeFleet } from '../support/leases.js';
import { pollUntil } from '../support/poll.js';
import { type FirestoreRead, recordingFirestore } from '../support/recording-firestore.js';

const projectId = testProjectId();
const db = new Firestore({ projectId });
const TOKEN = 'crawler-token-0123456789';
/** A residential provider's username, targeting options in it: past the 64 [A-Za-z0-9._~-] a VM takes. */
const PROVIDER_USER = 'customer-c1+zone-residential_proxy1-country-us-city-newyork-session-12345678';
const WINDOW_S = 120;
/** Transient Secret Manager failures still to come for the secret `flaky` (then it answers). */
let flakyFailures = 0;
/** Run (once) while the secret `slow` is being read: what happens meanwhile elsewhere in the plane. */
let whileReadingSlow: (() => Promise<void>) | null = null;
/** Run while the secret `fails-after` is being read, before the read fails transiently. */
let whileFailing: (() => Promise<void>) | null = null;
/** Run while the secret `withdrawn-<proxy>` is being read, with that proxy's name. */
let whileReadingWithdrawn: ((proxy: string) => Promise<void>) | null = null;
/** What each read of the secret `always-slow` takes on the test's clock. */
const SLOW_READ_MS = 6_000;
const secrets: SecretReader = {
  async access(ref) {
    if (ref.secret === 'eu-creds') return 'crawl:s3cr:et@';
    if (ref.secret === 'provider-creds') return `${PROVIDER_USER}:pw`;
    if (ref.secret.startsWith('withdrawn-')) {
      await whileReadingWithdrawn?.(ref.secret.slice('withdrawn-'.length));
      return 'crawl:withdrawn';
    }
    if (ref.secret === 'slow') {
      const meanwhile = whileReadingSlow;
      whileReadingSlow = null;
      await meanwhile?.();
      return 'crawl:slow';
    }
    if (ref.secret === 'always-slow') {
      // Secret Manager hanging: every read waits out its deadline, then the cached value is answered.
      clock.advance(SLOW_READ_MS);
      return 'crawl:slow';
    }
    if (ref.secret === 'fails-after') {
      await whileFailing?.();
      throw new SecretAccessError('transient', ref.secret, 'unavailable');
    }
    if (ref.secret === 'flaky') {
      if (flakyFailures-- > 0) throw new SecretAccessError('transient', ref.secret, 'unavailable');
      return 'crawl:flaky';
    }
    throw new SecretAccessError('not_found', ref.secret, 'no such secret');
  },
};

let clock: ManualClock;
let api: LeaseApiRuntime | undefined;
let app: ReturnType<typeof leaseTestApp>['app'];
let logs: Array<Record<string, unknown>> = [];

async function call(
  method: string,
  path: string,
  body?: unknown,
  token: string | null = TOKEN,
  extra: Record<string, string> = {},
) {
  const headers: Record<string, string> = { ...extra };
  if (token) headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await app.request(path, {
    method,
    headers,
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : null };
}
const acquire = (body: unknown = {}) => call('POST', '/v1/leases', body);

/** An API replica over the test's Firestore project and clock, reading secrets through `reader`. */
const build = (
  reader: SecretReader = secrets,
  candidateLimit?: number,
  firestore = new Firestore({ projectId }),
) =>
  leaseTestApp({
    firestore,
    clock,
    secrets: reader,
    lease: { tokens: [{ name: 'c1', token: TOKEN }], cooldownWindowMs: WINDOW_S * 1000 },
    ...(candidateLimit !== undefined && { candidateLimit }),
  });
/** Replicas beside start()'s main one, stopped after each test. */
const others: LeaseApiRuntime[] = [];
const replica = (reader?: SecretReader) => {
  const built = build(reader);
  others.push(built.leases);
  return built;
};

async function start(fleet = defaultFleet(), candidateLimit?: number, firestore?: Firestore) {
  await writeFleet(db, fleet);
  const built = build(secrets, candidateLimit, firestore);
  app = built.app;
  api = built.leases;
  logs = built.log.lines;
}

function defaultFleet() {
  return [
    proxy('eu-1', { attributes: { region: 'eu' }, capacity: 2, latencyMillis: 50 }),
    proxy('eu-2', { attributes: { region: 'eu' }, capacity: 2, latencyMillis: 20 }),
    proxy('eu-sick', { attributes: { region: 'eu' }, phase: 'Unhealthy' }),
    proxy('us-1', { attributes: { region: 'us' }, capacity: 1, external: true }),
  ].map((p) =>
    p.name === 'eu-1'
      ? { ...p, spec: { ...p.spec, credentialsRef: { secret: 'eu-creds', version: 'latest' } } }
      : p,
  );
}

beforeEach(async () => {
  await clearProject(projectId);
  clock = new ManualClock(new Date('2026-03-01T00:00:00Z'));
});
afterEach(async () => {
  whileFailing = null;
  await Promise.all(others.splice(0).map((r) => r.stop()));
  await api?.stop();
  api = undefined;
});
afterAll(async () => {
  await db.terminate();
});

describe('GET /v1/proxies (one route for crawlers and admins)', () => {
  it('lists with attribute and health filters, each proxy with its active leases; empty is 200', async () => {
    await start();
    const all = await call('GET', '/v1/proxies');
    expect(all.status).toBe(200);
    expect(all.body.count).toBe(4);
    expect(all.body.proxies.map((p: { name: string }) => p.name)).toEqual([
      'eu-1',
      'eu-2',
      'eu-sick',
      'us-1',
    ]);

    expect((await acquire({ selector: { region: 'us' } })).status).toBe(201);
    const eu = await call('GET', '/v1/proxies?attr.region=eu&healthy=true');
    expect(eu.status).toBe(200);
    expect(eu.body.count).toBe(2);
    expect(eu.body.proxies[0]).toMatchObject({
      name: 'eu-1',
      healthy: true,
      activeLeases: 0,
      spec: { capacity: 2, attributes: { region: 'eu' }, credentialsRef: { secret: 'eu-creds' } },
      status: { phase: 'Ready', latencyMillis: 50 },
    });
    expect(eu.body.proxies[1]).toMatchObject({ name: 'eu-2', healthy: true, activeLeases: 0 });
    const us = await call('GET', '/v1/proxies?attr.region=us');
    expect(us.body.proxies[0]).toMatchObject({ name: 'us-1', healthy: true, activeLeases: 1 });
    expect(JSON.stringify(all.body)).not.toContain('s3cr');
    const unhealthy = await call('GET', '/v1/proxies?healthy=false');
    expect(
      unhealthy.body.proxies.map((p: { name: string }) => [p.name, (p as { healthy?: boolean }).healthy]),
    ).toEqual([['eu-sick', false]]);
    expect(await call('GET', '/v1/proxies?attr.region=mars')).toMatchObject({
      status: 200,
      body: { proxies: [], count: 0 },
    });
    // The admin token sees the same listing; the crawler token cannot touch the admin routes: a valid
    // credential that may not be used there, 403 forbidden (an unknown token would be 401).
    expect((await call('GET', '/v1/proxies?healthy=true', undefined, ADMIN_TOKEN)).body.count).toBe(3);
    const forbidden = {
      status: 403,
      body: { error: 'forbidden', message: expect.stringContaining('crawler token') },
    };
    expect(await call('GET', '/v1/proxies/eu-1')).toMatchObject(forbidden);
    expect(await call('DELETE', '/v1/proxies/eu-1')).toMatchObject(forbidden);
    expect(await call('POST', '/v1/proxies/eu-1/reconcile')).toMatchObject(forbidden);
    expect(await call('GET', '/v1/proxies/eu-1', undefined, 'unknown-token-0123456789')).toMatchObject({
      status: 401,
      body: { error: 'unauthenticated' },
    });
  });

  // A hand-edited leaseState document the store cannot decode: the proxy counts as full (fail closed). The
  // listing showed that as the store's internal "full", activeLeases: 9007199254740991.
  it('lists a proxy whose lease state does not decode as full and says so, and leases nothing on it', async () => {
    await db.collection(LEASE_COLLECTIONS.leaseState).doc('eu-2').set({ entries: 'garbage' });
    await start();
    const eu = await call('GET', '/v1/proxies?attr.region=eu&healthy=true');
    expect(eu.body.proxies[1]).toMatchObject({ name: 'eu-2', activeLeases: 2, leaseStateInvalid: true });
    expect(eu.body.proxies[0]).toMatchObject({ name: 'eu-1', activeLeases: 0 });
    expect(eu.body.proxies[0]).not.toHaveProperty('leaseStateInvalid');
    // Still out of selection, as before: at capacity.
    expect(await acquire({ selector: { region: 'eu' }, exclusive: true })).toMatchObject({ status: 201 });
    expect(await acquire({ selector: { region: 'eu' } })).toMatchObject({
      status: 409,
      body: { error: 'no_match', considered: 3, atCapacity: 2, unhealthy: 1 },
    });
    expect(logs.some((l) => l.message === 'malformed lease state: proxy treated as full')).toBe(true);
  });

  it("lists a proxy's own startup script (spec.cloudInit) to admins only, not to crawlers", async () => {
    const script = "#!/bin/sh\n# the operator's own boot script\n";
    const managed = proxy('own-init');
    await start([
      { ...managed, spec: { ...managed.spec, cloudInit: { inline: script } } } as typeof managed,
      proxy('plain'),
    ]);
    const asCrawler = await call('GET', '/v1/proxies');
    const asAdmin = await call('GET', '/v1/proxies', undefined, ADMIN_TOKEN);
    const byName = (body: { proxies: { name: string; spec: Record<string, unknown> }[] }, name: string) =>
      body.proxies.find((p) => p.name === name)!;
    expect(byName(asAdmin.body, 'own-init').spec.cloudInit).toEqual({ inline: script });
    expect(byName(asCrawler.body, 'own-init').spec).not.toHaveProperty('cloudInit');
    expect(JSON.stringify(asCrawler.body)).not.toContain('boot script');
    // Everything else a crawler reads is the same.
    const { cloudInit: _, ...rest } = byName(asAdmin.body, 'own-init').spec;
    expect(byName(asCrawler.body, 'own-init').spec).toEqual(rest);
    expect(byName(asCrawler.body, 'plain')).toEqual(byName(asAdmin.body, 'plain'));
    // The crawler's listing says it is a view, so the CLI never applies it as a copy of the specs.
    expect(asCrawler.body.redacted).toEqual(['spec.cloudInit']);
    expect(asAdmin.body).not.toHaveProperty('redacted');
  });

  it('HEAD answers a crawler as GET does (200, no body), not 403 as if it were an admin route', async () => {
    await start();
    const head = await app.request('/v1/proxies?healthy=true', {
      method: 'HEAD',
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-type')).toContain('application/json');
    expect(await head.text()).toBe('');
    // By name it is an admin route whatever the method.
    const byName = await app.request('/v1/proxies/eu-1', {
      method: 'HEAD',
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(byName.status).toBe(403);
  });

  it.each([
    ['healthy=maybe', 'healthy'],
    ['attr.region=eu&attr.region=us', 'attr.region'],
    ['region=eu', 'region'],
    ['phase=ready', 'phase'],
    ['protocol=https', 'protocol'],
    ['protocol=SOCKS5', 'protocol'],
  ])('?%s → 400 invalid_request at %s', async (qs, path) => {
    await start([]);
    const res = await call('GET', `/v1/proxies?${qs}`);
    expect(res).toMatchObject({ status: 400, body: { error: 'invalid_request' } });
    expect(res.body.issues.map((i: { path: string }) => i.path)).toContain(path);
  });
});

describe('a SOCKS5 proxy (an external endpoint speaking SOCKS5)', () => {
  const socksFleet = () => {
    const p = proxy('res-1', { attributes: { pool: 'res' }, external: true, protocol: 'socks5' });
    return [{ ...p, spec: { ...p.spec, credentialsRef: { secret: 'eu-creds', version: 'latest' } } }];
  };

  it('is listed with its protocol, and leased as socks5://user:pass@host:port (encoded as for http)', async () => {
    await start(socksFleet());
    const listed = await call('GET', '/v1/proxies?attr.pool=res&healthy=true');
    expect(listed.body.proxies).toEqual([
      expect.objectContaining({
        name: 'res-1',
        healthy: true,
        spec: expect.objectContaining({
          endpoint: { host: 'proxy.example', port: 8080, protocol: 'socks5' },
        }),
      }),
    ]);
    const res = await acquire({ selector: { pool: 'res' }, protocols: ['socks5'] });
    expect(res.status).toBe(201);
    expect(res.body.proxy).toEqual({
      name: 'res-1',
      url: 'socks5://crawl:s3cr%3Aet%40@proxy.example:8080',
      host: 'proxy.example',
      port: 8080,
      protocol: 'socks5',
      attributes: { pool: 'res' },
      latencyMillis: null,
    });
    const url = new URL(res.body.proxy.url);
    expect([url.protocol, decodeURIComponent(url.username), decodeURIComponent(url.password)]).toEqual([
      'socks5:',
      'crawl',
      's3cr:et@',
    ]);
  });

  it("is leased with its provider's own username, which no managed proxy's VM would take", async () => {
    const p = proxy('res-1', { attributes: { pool: 'res' }, external: true, protocol: 'socks5' });
    await start([
      { ...p, spec: { ...p.spec, credentialsRef: { secret: 'provider-creds', version: 'latest' } } },
    ]);
    const res = await acquire({ selector: { pool: 'res' }, protocols: ['socks5'] });
    expect(res.status).toBe(201);
    const url = new URL(res.body.proxy.url);
    expect([decodeURIComponent(url.username), decodeURIComponent(url.password)]).toEqual([
      PROVIDER_USER,
      'pw',
    ]);
  });

  it("a managed proxy on the same provider secret is set aside alone: the external one's rule reads it fine", async () => {
    const vm = proxy('vm', { attributes: { pool: 'res' }, latencyMillis: 1 });
    const ext = proxy('res-1', { attributes: { pool: 'res' }, external: true, latencyMillis: 2 });
    const ref = { secret: 'provider-creds', version: 'latest' };
    await start([
      { ...vm, spec: { ...vm.spec, credentialsRef: ref } },
      { ...ext, spec: { ...ext.spec, credentialsRef: ref } },
    ]);
    const res = await acquire({ selector: { pool: 'res' } });
    expect(res.status).toBe(201);
    expect(res.body.proxy.name).toBe('res-1');
  });

  it('is opt-in: an acquire without `protocols` never gets it (409, not even considered); asking for it does', async () => {
    await start(socksFleet());
    expect(await acquire({ selector: { pool: 'res' } })).toMatchObject({
      status: 409,
      body: {
        error: 'no_match',
        message: expect.stringContaining(
          '1 more proxy matches the selector but speaks none of the requested',
        ),
        considered: 0,
        inGateway: 0,
        unhealthy: 0,
        inCooldown: 0,
        atCapacity: 0,
        otherProtocol: 1,
      },
    });
    expect(await acquire({ selector: { pool: 'res' }, protocols: ['http'] })).toMatchObject({ status: 409 });
    expect(await acquire({ selector: { pool: 'res' }, protocols: ['http', 'socks5'] })).toMatchObject({
      status: 201,
      body: { proxy: { name: 'res-1', protocol: 'socks5' } },
    });
  });

  it('beside an http proxy in the same pool: the default gets the http one, socks5 the SOCKS5 one', async () => {
    await start([...socksFleet(), proxy('dc-1', { attributes: { pool: 'res' }, capacity: 4 })]);
    const listed = async (qs: string) =>
      (await call('GET', `/v1/proxies?attr.pool=res&${qs}`)).body.proxies.map(
        (p: { name: string }) => p.name,
      );
    expect(await listed('healthy=true')).toEqual(['dc-1', 'res-1']);
    expect(await listed('leasable=true&protocol=http')).toEqual(['dc-1']);
    expect(await listed('leasable=true&protocol=socks5')).toEqual(['res-1']);
    for (let i = 0; i < 3; i++) {
      expect(await acquire({ selector: { pool: 'res' } })).toMatchObject({
        status: 201,
        body: { proxy: { name: 'dc-1', protocol: 'http', url: 'http://10.0.0.1:3128' } },
      });
    }
    expect(await acquire({ selector: { pool: 'res' }, protocols: ['socks5'] })).toMatchObject({
      status: 201,
      body: { proxy: { name: 'res-1', protocol: 'socks5' } },
    });
  });

  it('the OpenAPI document names both protocols for a leased proxy, and the http default of a request', async () => {
    await start([]);
    const { body } = await call('GET', '/openapi.json');
    expect(body.components.schemas.LeasedProxy.properties.protocol).toMatchObject({
      enum: ['http', 'socks5'],
    });
    expect(body.components.schemas.AcquireRequest.properties.protocols).toMatchObject({
      type: 'array',
      minItems: 1,
      default: ['http'],
      items: { enum: ['http', 'socks5'] },
      description: expect.stringContaining('socks5'),
    });
    // `{}` asks for http alone: the route's text says so, not "any proxy" (what client generators read).
    const described = body.paths['/v1/leases'].post.description;
    expect(described).toContain('`{}` leases any HTTP proxy');
    expect(described).toContain('`protocols` names `socks5`');
  });
});

describe('POST /v1/leases', () => {
  it('grants by fewest leases, then latency, then name; the URL carries credentials; then 409 with counts', async () => {
    await start();
    const names: string[] = [];
    for (let i = 0; i < 4; i++) {
      const res = await acquire({ selector: { region: 'eu' }, ttlSeconds: 60, target: 'Shop.Example' });
      expect(res.status).toBe(201);
      names.push(res.body.proxy.name);
      if (i === 0) {
        expect(res.headers.get('cache-control')).toBe('no-store');
        expect(res.body).toEqual({
          leaseId: expect.stringMatching(/^[0-9a-f]{32}$/),
          proxy: {
            name: 'eu-2',
            url: 'http://10.0.0.1:3128',
            host: '10.0.0.1',
            port: 3128,
            protocol: 'http',
            attributes: { region: 'eu' },
            latencyMillis: 20,
          },
          expiresAt: '2026-03-01T00:01:00.000Z',
          ttlSeconds: 60,
          target: 'shop.example',
          exclusive: false,
        });
      }
      if (res.body.proxy.name === 'eu-1')
        expect(res.body.proxy.url).toBe('http://crawl:s3cr%3Aet%40@10.0.0.1:3128');
    }
    expect(names).toEqual(['eu-2', 'eu-1', 'eu-2', 'eu-1']);
    expect(await acquire({ selector: { region: 'eu' } })).toMatchObject({
      status: 409,
      body: { error: 'no_match', considered: 3, atCapacity: 2, inCooldown: 0, unhealthy: 1 },
    });
    expect(await acquire({ selector: { region: 'nowhere' } })).toMatchObject({
      status: 409,
      body: { error: 'no_match', considered: 0, atCapacity: 0, inCooldown: 0, unhealthy: 0 },
    });
    expect(JSON.stringify(logs)).not.toContain('s3cr');
  });

  it('an exclusive lease takes the whole proxy', async () => {
    await start([proxy('solo', { capacity: 3 })]);
    const ex = await acquire({ exclusive: true });
    expect(ex).toMatchObject({ status: 201, body: { exclusive: true } });
    expect(await acquire({})).toMatchObject({ status: 409, body: { atCapacity: 1 } });
    await call('DELETE', `/v1/leases/${ex.body.leaseId}`);
    expect((await acquire({})).status).toBe(201);
    expect(await acquire({ exclusive: true })).toMatchObject({ status: 409, body: { atCapacity: 1 } });
  });

  it('{} takes the defaults', async () => {
    await start([proxy('solo')]);
    const res = await call('POST', '/v1/leases', {});
    expect(res).toMatchObject({ status: 201, body: { ttlSeconds: 300, target: null, exclusive: false } });
  });

  it('sets a proxy with unreadable credentials aside and leases another, leaving no lease behind', async () => {
    const bad = proxy('bad', { latencyMillis: 1 });
    await start([
      { ...bad, spec: { ...bad.spec, credentialsRef: { secret: 'missing', version: 'latest' } } },
      proxy('good'),
    ]);
    const res = await acquire({});
    expect(res).toMatchObject({ status: 201, body: { proxy: { name: 'good' } } });
    const leases = await db.collection(LEASE_COLLECTIONS.leases).get();
    const active = leases.docs.filter((d) => d.get('releasedAt') === null).map((d) => d.get('proxy'));
    expect(active).toEqual(['good']);
    expect(await acquire({})).toMatchObject({ status: 201, body: { proxy: { name: 'good' } } });
    expect(await acquire({})).toMatchObject({ status: 409, body: { unhealthy: 1, atCapacity: 1 } });
  });

  it('forgets what it set aside once the quarantine is over: the set holds the last 30 s, not every name ever', async () => {
    // Keyed by proxy names and secrets that come and go over months: the map only ever grew.
    const bad = proxy('bad', { latencyMillis: 1 });
    await start([
      { ...bad, spec: { ...bad.spec, credentialsRef: { secret: 'missing', version: 'latest' } } },
      proxy('good', { attributes: { region: 'eu' } }),
    ]);
    expect(await acquire({})).toMatchObject({ status: 201, body: { proxy: { name: 'good' } } });
    expect(api!.service.setAsideCount).toBe(2); // the proxy and its secret
    clock.advance(30_001);
    expect(await acquire({ selector: { region: 'eu' } })).toMatchObject({ status: 201 });
    expect(api!.service.setAsideCount).toBe(0);
  });

  it('one broken secret shared by several proxies sets them all aside at once: the healthy proxy is leased, not 503', async () => {
    // A secret rotated to a bad value (or deleted) breaks every proxy that names it, and the lease service
    // reads credentials per secret: trying those proxies one by one used up the three rounds an acquire
    // allows and answered 503 Retry-After: 30 while a proxy with good credentials had room.
    const broken = (name: string) => {
      const p = proxy(name, { latencyMillis: 1 });
      return { ...p, spec: { ...p.spec, credentialsRef: { secret: 'rotated-badly', version: 'latest' } } };
    };
    await start([broken('bad-1'), broken('bad-2'), broken('bad-3'), broken('bad-4'), proxy('good')]);
    const res = await acquire({});
    expect(res).toMatchObject({ status: 201, body: { proxy: { name: 'good' } } });
    const leases = await db.collection(LEASE_COLLECTIONS.leases).get();
    const active = leases.docs.filter((d) => d.get('releasedAt') === null).map((d) => d.get('proxy'));
    expect(active).toEqual(['good']);
    // All four sit out together, counted as unhealthy, while the good one fills up.
    expect(await acquire({})).toMatchObject({ status: 201, body: { proxy: { name: 'good' } } });
    expect(await acquire({})).toMatchObject({ status: 409, body: { unhealthy: 4, atCapacity: 1 } });
    // One counted line, naming the secret (an alert reads it: a fleet on one secret the API can no longer
    // read answers every acquire 409 no_match, which nothing else pages on).
    const unreadable = logs.filter((l) => l.event === 'leases.credentials_unreadable');
    expect(unreadable).toEqual([
      expect.objectContaining({ severity: 'ERROR', proxy: 'bad-1', secret: 'rotated-badly' }),
    ]);
    expect(missingContractFields(unreadable[0]!)).toEqual([]);
  });

  it('a transient Secret Manager failure sets aside that proxy only, not every proxy naming its secret', async () => {
    const flaky = (name: string, latencyMillis: number) => {
      const p = proxy(name, { latencyMillis });
      return { ...p, spec: { ...p.spec, credentialsRef: { secret: 'flaky', version: 'latest' } } };
    };
    await start([flaky('f-1', 1), flaky('f-2', 2)]);
    flakyFailures = 1;
    const res = await acquire({});
    expect(res).toMatchObject({
      status: 201,
      body: { proxy: { name: 'f-2', url: 'http://crawl:flaky@10.0.0.1:3128' } },
    });
  });

  it('when none of the best few can be granted, the acquire ranks them all: a proxy below them is leased, not 409', async () => {
    // A first plan ranks the best CANDIDATE_LIMIT (1 here). This replica's view says `a` has room — as
    // when it lags another replica's grants — but its lease state is full: the grant finds that, and
    // the acquire must go on to the proxies the first plan left out.
    await start([proxy('a', { latencyMillis: 1, capacity: 1 }), proxy('b', { latencyMillis: 2 })], 1);
    const first = await acquire({});
    expect(first).toMatchObject({ status: 201, body: { proxy: { name: 'a' } } });
    const store = api!.store as unknown as { usage: (p: { name: string }, now: Date) => unknown };
    const usage = store.usage.bind(store);
    store.usage = (p, now) => (p.name === 'a' ? { active: 0, exclusive: false } : usage(p, now));
    expect(await acquire({})).toMatchObject({ status: 201, body: { proxy: { name: 'b' } } });
  });

  it('a first plan whose candidates were passed over unread ranks them all, not 503 contended', async () => {
    // States this replica forgot rank as empty and can fill a first plan; the store reads 16 of them and
    // passes over the rest unread ("contended"): the proxies the plan left out may have room.
    await start([proxy('a', { latencyMillis: 1 }), proxy('b', { latencyMillis: 2 })], 1);
    const store = api!.store as unknown as { grant: (r: { candidates: unknown[] }) => Promise<unknown> };
    const grant = store.grant.bind(store);
    const sizes: number[] = [];
    store.grant = async (r) => {
      sizes.push(r.candidates.length);
      if (sizes.length === 1)
        throw new LeaseStoreError('contended', 'candidates passed over unread', { unread: 3 });
      return grant(r);
    };
    expect(await acquire({})).toMatchObject({ status: 201, body: { proxy: { name: 'a' } } });
    expect(sizes).toEqual([1, 2]);
    // Commits lost race after race (contended too, nothing unread): no second round to double them.
    sizes.length = 0;
    store.grant = async (r) => {
      sizes.push(r.candidates.length);
      throw new LeaseStoreError('contended', 'no commit after 16 attempts');
    };
    expect(await acquire({})).toMatchObject({ status: 503 });
    expect(sizes).toEqual([1]);
  });

  it('the request lines log a lease id only as a digest: the same for its every request, never the id', async () => {
    await start();
    const { body } = await acquire({});
    const id = body.leaseId as string;
    expect((await call('POST', `/v1/leases/${id}/renew`, {})).status).toBe(200);
    expect((await call('POST', `/v1/leases/${id}/report`, { result: 'ok' })).status).toBe(204);
    expect((await call('DELETE', `/v1/leases/${id}`)).status).toBe(204);
    const paths = logs.flatMap((l) => {
      const url = (l.httpRequest as { requestUrl?: string } | undefined)?.requestUrl;
      return url?.startsWith('/v1/leases/') ? [url] : [];
    });
    expect(paths).toHaveLength(3);
    const digest = paths[0]!.split('/')[3]!;
    expect(digest).toMatch(/^lease-[0-9a-f]{12}$/);
    expect(paths).toEqual([
      `/v1/leases/${digest}/renew`,
      `/v1/leases/${digest}/report`,
      `/v1/leases/${digest}`,
    ]);
    expect(JSON.stringify(logs)).not.toContain(id);
  });

  it('a grant whose credentials read outlasts half its TTL is given back and granted again: never answered run down', async () => {
    // Secret Manager hanging: the read waits out its deadline, then answers the cached value. The lease's
    // time ran from its commit: a 201 with a 10 s lease answered 6 s late left the crawler 4 s.
    const only = proxy('only', { latencyMillis: 1, capacity: 1 });
    await start([{ ...only, spec: { ...only.spec, credentialsRef: { secret: 'slow', version: 'latest' } } }]);
    whileReadingSlow = async () => clock.advance(6_000);
    const res = await acquire({ ttlSeconds: 10 });
    expect(res).toMatchObject({ status: 201, body: { proxy: { name: 'only' } } });
    expect(Date.parse(res.body.expiresAt) - clock.now().getTime()).toBe(10_000);
    // The first grant was given back (the proxy's one slot held once, by the answer's lease).
    const leases = await db.collection(LEASE_COLLECTIONS.leases).get();
    const active = leases.docs.filter((d) => d.get('releasedAt') === null).map((d) => d.id);
    expect(active).toEqual([res.body.leaseId]);
    expect(logs).toContainEqual(expect.objectContaining({ event: 'leases.grant_outlived', proxy: 'only' }));
  });

  it('every read that slow: 503 (credentials cannot be read now) after three grants given back, no lease held, no store alarm', async () => {
    const only = proxy('only', { latencyMillis: 1, capacity: 1 });
    await start([
      { ...only, spec: { ...only.spec, credentialsRef: { secret: 'always-slow', version: 'latest' } } },
    ]);
    const res = await acquire({ ttlSeconds: 10 });
    expect(res).toMatchObject({
      status: 503,
      body: { error: 'unavailable', message: 'credentials of the matching proxies cannot be read now' },
    });
    expect(res.headers.get('retry-after')).toBe('30');
    expect(logs.filter((l) => l.event === 'leases.grant_outlived')).toHaveLength(3);
    expect(logs.filter((l) => l.event === 'leases.store_unavailable')).toEqual([]);
    const leases = await db.collection(LEASE_COLLECTIONS.leases).get();
    expect(leases.docs.filter((d) => d.get('releasedAt') === null)).toEqual([]);
    // With a TTL the read leaves enough of (20 s of which 6 go): granted as before.
    expect(await acquire({ ttlSeconds: 20 })).toMatchObject({
      status: 201,
      body: { proxy: { name: 'only' } },
    });
  });

  it.each<[string, Record<string, unknown>, (p: ProxyResource | undefined) => boolean]>([
    [
      'is being deleted',
      { deletionRequestedAt: Timestamp.fromDate(new Date('2026-03-01T00:00:00Z')) },
      (p) => p?.deletionRequestedAt != null,
    ],
    ['joined the gateway pool', { 'spec.gatewayPool': true }, (p) => p?.spec.gatewayPool === true],
    ['turned Unhealthy', { 'status.phase': 'Unhealthy' }, (p) => p?.status.phase === 'Unhealthy'],
  ])(
    'a proxy that %s while its grant was being answered is not handed out: another is, nothing left on it',
    async (_, change, seen) => {
      // The grant commits against the selection's view; the catalog moves on while the grant waits its turn
      // and the credentials are read. The answer must go by the view it is sent with.
      const going = proxy('going', { latencyMillis: 1 });
      await start([
        { ...going, spec: { ...going.spec, credentialsRef: { secret: 'slow', version: 'latest' } } },
        proxy('stays', { latencyMillis: 2 }),
      ]);
      whileReadingSlow = async () => {
        await db.collection('proxies').doc('going').update(change);
        await pollUntil(async () => api?.catalog.get('going'), seen, 10_000, 'the catalog sees the change');
      };
      const res = await acquire({});
      expect(res).toMatchObject({ status: 201, body: { proxy: { name: 'stays' } } });
      const leases = await db.collection(LEASE_COLLECTIONS.leases).get();
      const active = leases.docs.filter((d) => d.get('releasedAt') === null).map((d) => d.get('proxy'));
      expect(active).toEqual(['stays']);
      // Not mistaken for a credentials fault: nothing logged as one.
      expect(logs.filter((l) => String(l.message).includes('credentials unreadable'))).toEqual([]);
    },
  );

  it('a proxy whose endpoint turned socks5 while its grant was being answered is not handed to an http-only request', async () => {
    // Selection asked for http on the older view; the answer is built from the view it leaves with, so it
    // must ask again: a socks5:// URL would be of no use to a crawler that asked for http alone.
    const going = proxy('going', { latencyMillis: 1, external: true });
    await start([
      { ...going, spec: { ...going.spec, credentialsRef: { secret: 'slow', version: 'latest' } } },
      proxy('stays', { latencyMillis: 2 }),
    ]);
    whileReadingSlow = async () => {
      await db.collection('proxies').doc('going').update({ 'spec.endpoint.protocol': 'socks5' });
      await pollUntil(
        async () => api?.catalog.get('going'),
        (p) => p?.spec.mode === 'external' && p.spec.endpoint.protocol === 'socks5',
        10_000,
        'the catalog sees the change',
      );
    };
    const res = await acquire({ protocols: ['http'] });
    expect(res).toMatchObject({ status: 201, body: { proxy: { name: 'stays', protocol: 'http' } } });
    const leases = await db.collection(LEASE_COLLECTIONS.leases).get();
    const active = leases.docs.filter((d) => d.get('releasedAt') === null).map((d) => d.get('proxy'));
    expect(active).toEqual(['stays']);
    // Withdrawn for its protocol, not set aside as a credentials fault.
    expect(logs.filter((l) => String(l.message).includes('credentials unreadable'))).toEqual([]);
  });

  it('a proxy whose address moved while its grant was being answered is handed out at its new one, not the old', async () => {
    // The credentials were read for the document selection saw; the answer goes with that document's
    // address, so a move in between must withdraw it (the new address may not take the old password).
    const going = proxy('going', { latencyMillis: 1, external: true });
    await start([
      { ...going, spec: { ...going.spec, credentialsRef: { secret: 'slow', version: 'latest' } } },
      proxy('stays', { latencyMillis: 2 }),
    ]);
    whileReadingSlow = async () => {
      await db.collection('proxies').doc('going').update({ 'spec.endpoint.port': 9090 });
      await pollUntil(
        async () => api?.catalog.get('going'),
        (p) => p?.spec.mode === 'external' && p.spec.endpoint.port === 9090,
        10_000,
        'the catalog sees the change',
      );
    };
    // Given back and selected again from the view that has moved it: handed out at its new address.
    const res = await acquire({});
    expect(res).toMatchObject({ status: 201, body: { proxy: { name: 'going', port: 9090 } } });
    expect(res.body.proxy.url).toMatch(/:9090$/);
    const leases = await db.collection(LEASE_COLLECTIONS.leases).get();
    expect(leases.docs.filter((d) => d.get('releasedAt') === null)).toHaveLength(1);
    expect(logs.filter((l) => String(l.message).includes('credentials unreadable'))).toEqual([]);
  });

  it('a proxy cordoned while its grant was being answered is handed out: a lease granted, as one a moment before', async () => {
    // The cordon stops selection; a grant already committed runs to its expiry like any lease on the proxy
    // (docs/leases.md § Cordon), so a replay of it under its Idempotency-Key answers the same.
    const going = proxy('going', { latencyMillis: 1 });
    await start([
      { ...going, spec: { ...going.spec, credentialsRef: { secret: 'slow', version: 'latest' } } },
      proxy('stays', { latencyMillis: 2 }),
    ]);
    whileReadingSlow = async () => {
      await db.collection('proxies').doc('going').update({ 'spec.cordoned': true });
      await pollUntil(
        async () => api?.catalog.get('going'),
        (p) => p?.spec.cordoned === true,
        10_000,
        'the catalog sees the cordon',
      );
    };
    const res = await acquire({});
    expect(res).toMatchObject({ status: 201, body: { proxy: { name: 'going' } } });
    const leases = await db.collection(LEASE_COLLECTIONS.leases).get();
    const active = leases.docs.filter((d) => d.get('releasedAt') === null).map((d) => d.get('proxy'));
    expect(active).toEqual(['going']);
    expect(await acquire({})).toMatchObject({ status: 201, body: { proxy: { name: 'stays' } } });
  });

  it('proxies withdrawn one after another while their grants are answered end in a 503 to retry, not a 409 while one has room', async () => {
    // Three proxies ranked first are each deleted while their grant is being answered (an admin deleting a
    // pool): the acquire gives up after three, while `stays` still has room. A 409 would tell the crawler
    // nothing can be leased (counts that do not add up to `considered`); the retry it is owed gets `stays`.
    const going = (name: string, latencyMillis: number) => {
      const p = proxy(name, { latencyMillis });
      return {
        ...p,
        spec: { ...p.spec, credentialsRef: { secret: `withdrawn-${name}`, version: 'latest' } },
      };
    };
    await start([going('w-1', 1), going('w-2', 2), going('w-3', 3), proxy('stays', { latencyMillis: 4 })]);
    whileReadingWithdrawn = async (name) => {
      await db
        .collection('proxies')
        .doc(name)
        .update({ deletionRequestedAt: Timestamp.fromDate(clock.now()) });
      await pollUntil(
        async () => api?.catalog.get(name),
        (p) => p?.deletionRequestedAt != null,
        10_000,
        'the catalog sees the deletion',
      );
    };
    try {
      const res = await acquire({});
      expect(res).toMatchObject({ status: 503, body: { error: 'unavailable' } });
      expect(res.headers.get('retry-after')).toBe('1');
      const leases = await db.collection(LEASE_COLLECTIONS.leases).get();
      expect(leases.docs.filter((d) => d.get('releasedAt') === null)).toEqual([]);
      expect(await acquire({})).toMatchObject({ status: 201, body: { proxy: { name: 'stays' } } });
    } finally {
      whileReadingWithdrawn = null;
    }
  });

  it('503 Retry-After: 30 when the credentials of every matching proxy are unreadable, nothing left leased', async () => {
    const own = (name: string) => {
      const p = proxy(name, { latencyMillis: 1 });
      return { ...p, spec: { ...p.spec, credentialsRef: { secret: `gone-${name}`, version: 'latest' } } };
    };
    await start([own('a'), own('b'), own('c'), own('d')]);
    const res = await acquire({});
    expect(res).toMatchObject({ status: 503, body: { error: 'unavailable' } });
    expect(res.headers.get('retry-after')).toBe('30');
    const leases = await db.collection(LEASE_COLLECTIONS.leases).get();
    expect(leases.docs.filter((d) => d.get('releasedAt') === null)).toEqual([]);
  });

  it.each<[unknown, string, string]>([
    [{ ttlSeconds: 0 }, 'invalid_request', 'ttlSeconds'],
    [{ ttlSeconds: 3601 }, 'invalid_request', 'ttlSeconds'],
    [{ ttlSeconds: 1.5 }, 'invalid_request', 'ttlSeconds'],
    [{ ttlSeconds: '60' }, 'invalid_request', 'ttlSeconds'],
    [{ selector: 'eu' }, 'invalid_request', 'selector'],
    [{ selector: { region: 5 } }, 'invalid_request', 'selector.region'],
    [{ selector: { 'bad key!': 'x' } }, 'invalid_request', 'selector.bad key!'],
    [{ target: '*' }, 'invalid_request', 'target'],
    [{ target: 'a b' }, 'invalid_request', 'target'],
    [{ target: '[::1' }, 'invalid_request', 'target'],
    [{ target: '[1::2::3]:443' }, 'invalid_request', 'target'],
    [{ target: '[::1]:65536' }, 'invalid_request', 'target'],
    [{ target: 'shop.example:65536' }, 'invalid_request', 'target'],
    [{ target: 'shop.example:443:443' }, 'invalid_request', 'target'],
    [{ exclusive: 'yes' }, 'invalid_request', 'exclusive'],
    [{ owner: 'me' }, 'invalid_request', 'owner'],
    [{ protocols: [] }, 'invalid_request', 'protocols'],
    [{ protocols: ['http', 'http'] }, 'invalid_request', 'protocols'],
    [{ protocols: ['https'] }, 'invalid_request', 'protocols.0'],
    [{ protocols: ['HTTP'] }, 'invalid_request', 'protocols.0'],
    [{ protocols: 'socks5' }, 'invalid_request', 'protocols'],
    ['{"selector":{"__proto__":"x"}}', 'invalid_request', 'selector.__proto__'],
    [[], 'invalid_request', ''],
    [null, 'invalid_request', ''],
    ['{"selector":', 'invalid_json', ''],
    ['', 'invalid_json', ''],
  ])('%j → 400 %s at "%s"', async (body, error, path) => {
    await start([proxy('solo')]);
    const res = await acquire(body);
    expect(res).toMatchObject({ status: 400, body: { error, message: expect.any(String) } });
    if (path) expect(res.body.issues.map((i: { path: string }) => i.path)).toContain(path);
  });

  it('refuses other media types with 415', async () => {
    await start([proxy('solo')]);
    const res = await app.request('/v1/leases', {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'text/plain' },
      body: '{}',
    });
    expect(res.status).toBe(415);
    expect(await res.json()).toMatchObject({ error: 'unsupported_media_type' });
  });
});

describe('POST /v1/leases with an Idempotency-Key', () => {
  const TOKEN2 = 'crawler-token-other-0123456';
  const KEYS = 'leaseKeys';
  const keyed = (key: string, body: unknown = {}, token = TOKEN) =>
    call('POST', '/v1/leases', body, token, { 'idempotency-key': key });
  /** `{}` acquired under `key` through another replica (its raw Response). */
  const keyedVia = (other: ReturnType<typeof leaseTestApp>, key: string) =>
    other.app.request('/v1/leases', {
      method: 'POST',
      headers: {
        authorization: `Bearer ${TOKEN}`,
        'content-type': 'application/json',
        'idempotency-key': key,
      },
      body: '{}',
    });
  const activeLeases = async () =>
    (await db.collection(LEASE_COLLECTIONS.leases).get()).docs.filter((d) => d.get('releasedAt') === null);
  const stateOf = async (name: string) =>
    (await db.collection(LEASE_COLLECTIONS.leaseState).doc(name).get()).get('entries') as unknown[];

  async function startTwoCrawlers(fleet = [proxy('solo', { capacity: 3 })]) {
    await writeFleet(db, fleet);
    const built = leaseTestApp({
      firestore: new Firestore({ projectId }),
      clock,
      secrets,
      lease: {
        tokens: [
          { name: 'c1', token: TOKEN },
          { name: 'c2', token: TOKEN2 },
        ],
        cooldownWindowMs: WINDOW_S * 1000,
      },
    });
    app = built.app;
    api = built.leases;
    logs = built.log.lines;
  }

  it('a retry through the typed client after a lost answer yields the one lease, one slot taken', async () => {
    await start([proxy('solo', { capacity: 3 })]);
    // The API grants, then the answer is lost on the way (Cloud Run's front end answers 503 in HTML): the
    // client retries with the key it sent the first time.
    let first = true;
    const keys: Array<string | null> = [];
    const client = new LeaseClient({
      baseUrl: 'http://api.test',
      token: TOKEN,
      fetch: (async (url: string, init: RequestInit) => {
        keys.push(new Headers(init.headers).get('idempotency-key'));
        const res = await app.request(url, init);
        if (!first) return res;
        first = false;
        await res.text();
        return new Response('<html>503</html>', { status: 503, headers: { 'retry-after': '0' } });
      }) as typeof fetch,
    });
    const grant = await client.acquire({ ttlSeconds: 60 });
    expect(keys).toHaveLength(2);
    expect(keys[0]).toMatch(/^[0-9a-f-]{36}$/);
    expect(keys[1]).toBe(keys[0]);
    const active = await activeLeases();
    expect(active.map((d) => d.id)).toEqual([grant.leaseId]);
    expect(await stateOf('solo')).toHaveLength(1);
    // A new logical acquire is a new key: a second lease.
    const second = await client.acquire({ ttlSeconds: 60 });
    expect(second.leaseId).not.toBe(grant.leaseId);
    expect(keys[2]).not.toBe(keys[0]);
  });

  it('a retry through the typed client after an answer lost to a reset or a front-end 502 yields the one lease', async () => {
    await start([proxy('solo', { capacity: 3 })]);
    // The grant commits, then the connection is reset before the answer arrives (fetch throws), and the
    // retry's answer is lost to the front end's 502: the client must retry both under the key it sent,
    // not throw — a crawler retrying the error itself would send a new key and hold a second lease.
    let n = 0;
    const keys: Array<string | null> = [];
    const client = new LeaseClient({
      baseUrl: 'http://api.test',
      token: TOKEN,
      fetch: (async (url: string, init: RequestInit) => {
        keys.push(new Headers(init.headers).get('idempotency-key'));
        const res = await app.request(url, init);
        n++;
        if (n > 2) return res;
        await res.text();
        if (n === 1) throw new TypeError('fetch failed', { cause: new Error('read ECONNRESET') });
        return new Response('<html>502 Bad Gateway</html>', { status: 502 });
      }) as typeof fetch,
    });
    const grant = await client.acquire({ ttlSeconds: 60 });
    expect(keys).toHaveLength(3);
    expect(new Set(keys).size).toBe(1);
    expect((await activeLeases()).map((d) => d.id)).toEqual([grant.leaseId]);
    expect(await stateOf('solo')).toHaveLength(1);
  });

  it('the same key and request answers 201 with the same lease, proxy and URL, and takes no second slot', async () => {
    await start();
    const a = await keyed('k-1', { selector: { region: 'eu' }, ttlSeconds: 60 });
    expect(a.status).toBe(201);
    expect(a.headers.get('idempotent-replayed')).toBeNull();
    clock.advance(5_000);
    // The same request in another spelling (defaults written out) is the same request.
    const b = await keyed('k-1', { ttlSeconds: 60, selector: { region: 'eu' }, exclusive: false });
    expect(b.status).toBe(201);
    expect(b.headers.get('idempotent-replayed')).toBe('true');
    expect(b.headers.get('cache-control')).toBe('no-store');
    expect(b.body).toEqual(a.body);
    expect((await activeLeases()).length).toBe(1);
    expect(await stateOf(a.body.proxy.name)).toHaveLength(1);
    // The record keeps the lease id and a digest of the request: no credentials, not the key itself;
    // and when a replay answered with it.
    const records = await db.collection(KEYS).get();
    expect(records.size).toBe(1);
    const record = records.docs[0]!;
    expect(Object.keys(record.data()).sort()).toEqual([
      'createdAt',
      'expireAt',
      'leaseId',
      'replayedAt',
      'requestHash',
    ]);
    expect(record.get('replayedAt').toDate()).toEqual(clock.now());
    expect(record.get('leaseId')).toBe(a.body.leaseId);
    expect(record.get('expireAt').toDate().toISOString()).toBe('2026-03-01T00:10:00.000Z');
    expect(JSON.stringify(record.data())).not.toContain('k-1');
    expect(record.id).not.toContain('k-1');
    // Without a key an acquire is what it always was: each one a new lease.
    expect((await acquire({ selector: { region: 'eu' } })).body.leaseId).not.toBe(a.body.leaseId);
  });

  it('two deliveries of one key at once, to one replica or two, grant one lease', async () => {
    await start([proxy('solo', { capacity: 10 })]);
    const other = replica();
    for (let i = 0; i < 4; i++) {
      const key = `race-${i}`;
      const [x, y, z] = await Promise.all([keyed(key), keyed(key), keyedVia(other, key)]);
      const zBody = await z.json();
      expect([x.status, y.status, z.status]).toEqual([201, 201, 201]);
      expect(y.body.leaseId).toBe(x.body.leaseId);
      expect(zBody.leaseId).toBe(x.body.leaseId);
    }
    expect((await activeLeases()).length).toBe(4);
    expect(await stateOf('solo')).toHaveLength(4);
  });

  it("a delivery that finds the slot taken by its own twin answers with the twin's lease, not 409 no_match", async () => {
    // A retry sent while the first delivery is still running (a client timeout): replica B reads the key
    // (no record yet), then A grants the only slot under it; B, seeing the proxy full, must not answer
    // no_match — the client would give the key up and the lease A granted would be held by no one.
    await start([proxy('solo', { capacity: 1 })]);
    const other = replica();
    const store = other.leases.store as unknown as {
      findKey(id: string): Promise<unknown>;
      state: { proxyOf(leaseId: string): string | undefined };
    };
    const findKey = store.findKey.bind(store);
    let bRead!: () => void;
    const bHasRead = new Promise<void>((r) => (bRead = r));
    let aGranted!: (leaseId: string) => void;
    const aDone = new Promise<string>((r) => (aGranted = r));
    let first = true;
    let bKnew: string | undefined;
    store.findKey = async (id) => {
      const found = await findKey(id);
      if (!first) return found;
      first = false;
      bRead();
      // Meanwhile another request on B read the proxy's state (B's view is refreshed by reads, not
      // listened to): B now knows the slot is taken.
      const leaseId = await aDone;
      clock.advance(1_001);
      await other.leases.store.refresh(['solo']);
      bKnew = store.state.proxyOf(leaseId);
      return found;
    };
    const viaB = keyedVia(other, 'twin');
    await bHasRead;
    const a = await keyed('twin');
    expect(a.status).toBe(201);
    aGranted(a.body.leaseId);
    const b = await viaB;
    expect(bKnew).toBe('solo');
    expect(b.status).toBe(201);
    expect((await b.json()).leaseId).toBe(a.body.leaseId);
    expect((await activeLeases()).map((d) => d.id)).toEqual([a.body.leaseId]);
  });

  it('the same key with another request is 422 idempotency_key_reused and acquires nothing', async () => {
    await start();
    const a = await keyed('k-2', { selector: { region: 'eu' } });
    expect(a.status).toBe(201);
    for (const body of [{ selector: { region: 'us' } }, { selector: { region: 'eu' }, ttlSeconds: 60 }]) {
      expect(await keyed('k-2', body)).toMatchObject({
        status: 422,
        body: { error: 'idempotency_key_reused' },
      });
    }
    expect((await activeLeases()).map((d) => d.id)).toEqual([a.body.leaseId]);
  });

  it.each([
    ['empty', ''],
    ['too long', 'k'.repeat(129)],
    ['a space', 'a b'],
    ['two keys', 'a, b'],
    ['a slash', 'a/b'],
  ])('a malformed key (%s) is 400 invalid_idempotency_key and changes nothing', async (_, key) => {
    await start([proxy('solo')]);
    const res = await keyed(key);
    expect(res).toMatchObject({ status: 400, body: { error: 'invalid_idempotency_key' } });
    expect((await db.collection(LEASE_COLLECTIONS.leases).get()).size).toBe(0);
    expect((await db.collection(KEYS).get()).size).toBe(0);
  });

  it("is scoped to the caller: another crawler's same key is its own lease, never the first one's", async () => {
    await startTwoCrawlers();
    const a = await keyed('shared-key', {}, TOKEN);
    const b = await keyed('shared-key', {}, TOKEN2);
    expect([a.status, b.status]).toEqual([201, 201]);
    expect(b.body.leaseId).not.toBe(a.body.leaseId);
    expect(b.headers.get('idempotent-replayed')).toBeNull();
    // And each one's replay is its own.
    expect((await keyed('shared-key', {}, TOKEN2)).body.leaseId).toBe(b.body.leaseId);
    expect((await keyed('shared-key', {}, TOKEN)).body.leaseId).toBe(a.body.leaseId);
    // A different body under the other crawler's key is no conflict of this one's.
    expect((await keyed('shared-key', { ttlSeconds: 60 }, TOKEN2)).status).toBe(422);
    expect((await keyed('shared-key', {}, TOKEN)).status).toBe(201);
    expect((await activeLeases()).length).toBe(2);
  });

  it('a replay whose lease ends while its credentials are read is 409 idempotency_key_spent, not a 201 with it', async () => {
    const solo = proxy('solo');
    await start([{ ...solo, spec: { ...solo.spec, credentialsRef: { secret: 'slow', version: 'latest' } } }]);
    const a = await keyed('k-slow', { ttlSeconds: 30 });
    expect(a.status).toBe(201);
    clock.advance(20_000);
    whileReadingSlow = async () => clock.advance(15_000);
    expect(await keyed('k-slow', { ttlSeconds: 30 })).toMatchObject({
      status: 409,
      body: { error: 'idempotency_key_spent' },
    });
  });

  it('a released or expired lease under its key is 409 idempotency_key_spent; past the window the key is new', async () => {
    await start([proxy('solo')]);
    const a = await keyed('k-3', { ttlSeconds: 30 });
    expect((await call('DELETE', `/v1/leases/${a.body.leaseId}`)).status).toBe(204);
    expect(await keyed('k-3', { ttlSeconds: 30 })).toMatchObject({
      status: 409,
      body: { error: 'idempotency_key_spent' },
    });
    const b = await keyed('k-4', { ttlSeconds: 30 });
    clock.advance(30_000);
    expect(await keyed('k-4', { ttlSeconds: 30 })).toMatchObject({
      status: 409,
      body: { error: 'idempotency_key_spent' },
    });
    expect((await activeLeases()).length).toBe(1); // b's, expired by the clock, not released
    clock.advance(10 * 60_000);
    const c = await keyed('k-4', { ttlSeconds: 30 });
    expect(c.status).toBe(201);
    expect(c.body.leaseId).not.toBe(b.body.leaseId);
    expect((await keyed('k-4', { ttlSeconds: 30 })).body.leaseId).toBe(c.body.leaseId);
  });

  it('a grant given back (unreadable credentials) does not spend the key: its replay is the lease handed out', async () => {
    const bad = proxy('bad', { latencyMillis: 1 });
    await start([
      { ...bad, spec: { ...bad.spec, credentialsRef: { secret: 'missing', version: 'latest' } } },
      proxy('good'),
    ]);
    const a = await keyed('k-5');
    expect(a).toMatchObject({ status: 201, body: { proxy: { name: 'good' } } });
    expect(await keyed('k-5')).toMatchObject({ status: 201, body: { leaseId: a.body.leaseId } });
    expect((await activeLeases()).map((d) => d.id)).toEqual([a.body.leaseId]);
  });

  it('a replay whose lease can no longer be handed out gives it back and acquires anew under the key', async () => {
    await start([proxy('a', { latencyMillis: 1 }), proxy('b', { latencyMillis: 2 })]);
    const first = await keyed('k-7', { ttlSeconds: 60 });
    expect(first.body.proxy.name).toBe('a');
    clock.advance(2_000); // the retry comes after the grant (a replay gives back only a grant before it)
    await db
      .collection('proxies')
      .doc('a')
      .update({ deletionRequestedAt: Timestamp.fromDate(clock.now()) });
    const again = await pollUntil(
      () => keyed('k-7', { ttlSeconds: 60 }),
      (r) => r.status === 201 && r.body.proxy.name === 'b',
      10_000,
      'the replay to move to b',
    );
    expect(again.body.leaseId).not.toBe(first.body.leaseId);
    expect((await activeLeases()).map((d) => d.id)).toEqual([again.body.leaseId]);
    expect(await keyed('k-7', { ttlSeconds: 60 })).toMatchObject({
      status: 201,
      body: { leaseId: again.body.leaseId },
    });
  });

  it('a replayed lease whose proxy is withdrawn since is 409 idempotency_key_spent, not 503 until it ends', async () => {
    // The replay's answer may be what the crawler holds, so the lease is not given back; a 503 would say
    // "retry", and every retry would find the same until the lease ran out.
    await start([proxy('a', { latencyMillis: 1 }), proxy('b', { latencyMillis: 2 })]);
    const first = await keyed('k-8', { ttlSeconds: 60 });
    expect(first.body.proxy.name).toBe('a');
    expect(await keyed('k-8', { ttlSeconds: 60 })).toMatchObject({
      status: 201,
      body: { leaseId: first.body.leaseId },
    });
    await db
      .collection('proxies')
      .doc('a')
      .update({ deletionRequestedAt: Timestamp.fromDate(clock.now()) });
    const spent = await pollUntil(
      () => keyed('k-8', { ttlSeconds: 60 }),
      (r) => r.status !== 201,
      10_000,
      'the replay to see the proxy withdrawn',
    );
    expect(spent).toMatchObject({
      status: 409,
      body: { error: 'idempotency_key_spent', message: expect.stringContaining('withdrawn') },
    });
    expect((await activeLeases()).map((d) => d.id)).toEqual([first.body.leaseId]);
    expect(await keyed('k-9', { ttlSeconds: 60 })).toMatchObject({
      status: 201,
      body: { proxy: { name: 'b' } },
    });
  });

  /** A proxy whose credentials read runs `whileFailing`, then fails (transiently). */
  const failingAfter = (name: string, o: ProxyOptions = {}) => {
    const p = proxy(name, { latencyMillis: 1, ...o });
    return { ...p, spec: { ...p.spec, credentialsRef: { secret: 'fails-after', version: 'latest' } } };
  };
  /** Until the key's record is written: the first delivery has granted (its answer still under way). */
  const keyRecorded = () =>
    pollUntil(
      async () => (await db.collection(KEYS).get()).size,
      (n) => n === 1,
      10_000,
      'the first delivery to grant',
    );
  /** The answer of a delivery that may not give the key's lease back, and that lease kept, alone. */
  const expectKept = async (answer: { status: number; body: unknown }, leaseId: string) => {
    expect(answer).toMatchObject({ status: 503, body: { error: 'unavailable' } });
    expect((await activeLeases()).map((d) => d.id)).toEqual([leaseId]);
    expect(await stateOf('solo')).toHaveLength(1);
  };
  /** Another replica whose Secret Manager reads all succeed. */
  const replicaReading = () => replica({ access: async () => 'crawl:read' });
  const gate = () => {
    let open!: () => void;
    const opened = new Promise<void>((r) => (open = r));
    return { open, opened };
  };
  /** The main replica's next read of a key record waits until `resume.open()`; `isStalled` once it does. */
  const stallNextFindKey = () => {
    const store = api!.store as unknown as { findKey(id: string): Promise<unknown> };
    const findKey = store.findKey.bind(store);
    const resume = gate();
    let stalled!: () => void;
    const isStalled = new Promise<void>((r) => (stalled = r));
    store.findKey = async (id) => {
      store.findKey = findKey;
      stalled();
      await resume.opened;
      return findKey(id);
    };
    return { isStalled, resume };
  };

  it('a grant whose lease runs out while its credentials are read takes its record back: the acquire moves on', async () => {
    await start([failingAfter('first'), proxy('good', { latencyMillis: 2 })]);
    whileFailing = async () => {
      whileFailing = null;
      clock.advance(6_000); // past the lease's 5 s
    };
    const a = await keyed('k-ran-out', { ttlSeconds: 5 });
    expect(a).toMatchObject({ status: 201, body: { proxy: { name: 'good' } } });
    expect(await keyed('k-ran-out', { ttlSeconds: 5 })).toMatchObject({
      status: 201,
      body: { leaseId: a.body.leaseId },
    });
  });

  it('a grant a replay on another replica answered with is not given back by the delivery that made it', async () => {
    // The typed client times out on a slow credentials read and retries; the retry lands on a replica
    // that reads them and answers with the lease. The first delivery's read then fails: giving the lease
    // back would free the proxy under the crawler's feet.
    await start([failingAfter('solo', { capacity: 1 })]);
    const read = gate();
    whileFailing = () => read.opened;
    const other = replicaReading();
    const first = keyed('k-answered');
    await keyRecorded();
    const retry = await keyedVia(other, 'k-answered');
    expect(retry.status).toBe(201);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    const { leaseId } = await retry.json();
    read.open();
    await expectKept(await first, leaseId);
  });

  it('a replay never gives back a lease another replay answered with', async () => {
    // The first retry is answered by a replica that reads the credentials; a later delivery of the key on
    // a replica that cannot read them (a slow one, its answer no longer awaited) must not free the lease
    // under the crawler: it answers 503, the lease stays.
    await start([failingAfter('solo', { capacity: 1 })]);
    const other = replicaReading();
    const granted = await keyedVia(other, 'k-kept');
    const { leaseId } = await granted.json();
    expect((await keyedVia(other, 'k-kept')).headers.get('idempotent-replayed')).toBe('true');
    await expectKept(await keyed('k-kept'), leaseId);
  });

  it('an older delivery, stalled until a newer one was granted and answered, does not give that grant back', async () => {
    // D1 stalls before it reads the key; the client's retry D2 is granted and answered on another replica.
    // D1 then replays D2's lease and cannot read its credentials: the crawler holds D2's answer.
    await start([failingAfter('solo', { capacity: 1 })]);
    const { isStalled, resume } = stallNextFindKey();
    const other = replicaReading();
    const older = keyed('k-older');
    await isStalled;
    clock.advance(5_000);
    const newer = await keyedVia(other, 'k-older');
    expect(newer.status).toBe(201);
    const { leaseId } = await newer.json();
    resume.open();
    await expectKept(await older, leaseId);
  });

  it('an older delivery that finds the newer grant on a withdrawn proxy answers 503, not key_spent: no replay answered', async () => {
    // The delivery that made the grant may still give it back and grant again under the key; the retry the
    // 503 asks for replays that. idempotency_key_spent is for a lease a replay has answered with.
    await start([proxy('solo', { capacity: 1, latencyMillis: 1 })]);
    const { isStalled, resume } = stallNextFindKey();
    const other = replica();
    const older = keyed('k-older-w');
    await isStalled;
    clock.advance(5_000);
    const newer = await keyedVia(other, 'k-older-w');
    expect(newer.status).toBe(201);
    const { leaseId } = await newer.json();
    await db
      .collection('proxies')
      .doc('solo')
      .update({ deletionRequestedAt: Timestamp.fromDate(clock.now()) });
    await pollUntil(
      async () => api?.catalog.get('solo'),
      (p) => p?.deletionRequestedAt != null,
      10_000,
      'the catalog sees the withdrawal',
    );
    resume.open();
    expect(await older).toMatchObject({ status: 503, body: { error: 'unavailable' } });
    expect((await activeLeases()).map((d) => d.id)).toEqual([leaseId]);
  });

  it('a replay whose give-back finds the key granted again meanwhile answers with that grant, not 503', async () => {
    // Both deliveries read credentials that fail: the first gives its lease back and grants on another
    // proxy while the replay reads; the replay's own give-back then finds the record moved on.
    await start([failingAfter('first'), proxy('good', { latencyMillis: 2 })]);
    const read = gate();
    let first!: ReturnType<typeof keyed>;
    let answered: Awaited<ReturnType<typeof keyed>> | undefined;
    let reads = 0;
    whileFailing = async () => {
      if (++reads === 1) return read.opened; // the first delivery's read waits
      if (reads !== 2) return;
      read.open(); // during the replay's read, the first delivery fails, gives back, grants again
      answered = await first;
    };
    const other = replica();
    first = keyed('k-followed');
    await keyRecorded();
    clock.advance(2_000); // the retry, sent after the grant
    const retry = await keyedVia(other, 'k-followed');
    expect(answered).toMatchObject({ status: 201, body: { proxy: { name: 'good' } } });
    expect(retry.status).toBe(201);
    expect((await retry.json()).leaseId).toBe(answered!.body.leaseId);
    expect((await activeLeases()).map((d) => d.id)).toEqual([answered!.body.leaseId]);
  });

  it('a replay that finds its lease given back by the grant that made it follows the key to the next grant', async () => {
    // The retry reads the record naming the first grant, which the first delivery then gives back (its
    // credentials read failed) and replaces by a grant on another proxy: that one is the key's answer,
    // not 409 idempotency_key_spent — the crawler would give the key up with a lease held by no one.
    await start([failingAfter('first'), proxy('good', { latencyMillis: 2 })]);
    const read = gate();
    whileFailing = () => read.opened;
    const other = replicaReading();
    const first = keyed('k-moved');
    await keyRecorded();
    const store = other.leases.store as unknown as { find(id: string): Promise<unknown> };
    const find = store.find.bind(store);
    let answered: Awaited<typeof first> | undefined;
    store.find = async (id) => {
      store.find = find;
      read.open(); // between the retry's two reads, the first delivery gives back and grants again
      answered = await first;
      return find(id);
    };
    const retry = await keyedVia(other, 'k-moved');
    expect(answered).toMatchObject({ status: 201, body: { proxy: { name: 'good' } } });
    expect(retry.status).toBe(201);
    expect((await retry.json()).leaseId).toBe(answered!.body.leaseId);
    expect((await activeLeases()).map((d) => d.id)).toEqual([answered!.body.leaseId]);
  });

  it('a no_match leaves the key unused: the retry acquires once there is room', async () => {
    await start([proxy('solo', { capacity: 1 })]);
    const held = await acquire({});
    expect((await keyed('k-6')).status).toBe(409);
    await call('DELETE', `/v1/leases/${held.body.leaseId}`);
    const b = await keyed('k-6');
    expect(b.status).toBe(201);
    expect((await keyed('k-6')).body.leaseId).toBe(b.body.leaseId);
  });

  it('the OpenAPI document names the header and the answers it adds', async () => {
    await start([]);
    const { body } = await call('GET', '/openapi.json');
    const op = body.paths['/v1/leases'].post;
    expect(op.parameters).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ name: 'idempotency-key', in: 'header', required: false }),
      ]),
    );
    expect(Object.keys(op.responses)).toEqual(expect.arrayContaining(['409', '422']));
    expect(op.responses['201'].headers['Idempotent-Replayed']).toBeDefined();
  });
});

describe('renew and release', () => {
  it('a renewal without a body uses the TTL the last renewal named, as /openapi.json says', async () => {
    await start([proxy('solo')]);
    const { body: lease } = await acquire({ ttlSeconds: 60 });
    const renew = (body?: unknown) => call('POST', `/v1/leases/${lease.leaseId}/renew`, body);
    expect((await renew({ ttlSeconds: 600 })).body).toMatchObject({ ttlSeconds: 600 });
    clock.advance(590_000);
    // 600 s from now, not 60 (the TTL of the grant): the stored TTL is the last one asked for.
    expect((await renew()).body).toMatchObject({
      expiresAt: '2026-03-01T00:19:50.000Z',
      ttlSeconds: 600,
    });
    const doc = await call('GET', '/openapi.json');
    const described = doc.body.components.schemas.RenewRequest.properties.ttlSeconds.description;
    expect(described).toMatch(/last renew/i);
  });

  it('renews within the bound; 404 unknown; 409 expired or released; release is always 204', async () => {
    await start([proxy('solo')]);
    const { body: lease } = await acquire({ ttlSeconds: 60 });
    clock.advance(30_000);
    expect(await call('POST', `/v1/leases/${lease.leaseId}/renew`, { ttlSeconds: 600 })).toEqual({
      status: 200,
      headers: expect.anything(),
      body: { leaseId: lease.leaseId, expiresAt: '2026-03-01T00:10:30.000Z', ttlSeconds: 600 },
    });
    expect(await call('POST', `/v1/leases/${lease.leaseId}/renew`, { ttlSeconds: 4000 })).toMatchObject({
      status: 400,
      body: { error: 'invalid_request', issues: [{ path: 'ttlSeconds' }] },
    });
    expect((await call('POST', `/v1/leases/${lease.leaseId}/renew`)).body.expiresAt).toBe(
      '2026-03-01T00:10:30.000Z',
    );
    expect(await call('POST', '/v1/leases/AAAAAAAAAAAAAAAAAAAAAA/renew')).toMatchObject({
      status: 404,
      body: { error: 'unknown_lease' },
    });

    expect((await call('DELETE', `/v1/leases/${lease.leaseId}`)).status).toBe(204);
    expect((await call('DELETE', `/v1/leases/${lease.leaseId}`)).status).toBe(204);
    expect((await call('DELETE', '/v1/leases/AAAAAAAAAAAAAAAAAAAAAA')).status).toBe(204);
    expect((await call('DELETE', '/v1/leases/..%2F..%2Fproxies%2Fsolo')).status).toBe(204);
    expect((await call('DELETE', `/v1/leases/${lease.leaseId}`, { please: true })).status).toBe(400);
    expect(await call('POST', `/v1/leases/${lease.leaseId}/renew`)).toMatchObject({
      status: 409,
      body: { error: 'lease_released' },
    });

    const { body: other } = await acquire({ ttlSeconds: 10 });
    clock.advance(10_000);
    expect(await call('POST', `/v1/leases/${other.leaseId}/renew`)).toMatchObject({
      status: 409,
      body: { error: 'lease_expired' },
    });
    clock.advance(WINDOW_S * 1000);
    expect((await call('POST', `/v1/leases/${other.leaseId}/renew`)).status).toBe(404);
  });
});

describe('a query parameter no lease route reads', () => {
  // `DELETE /v1/leases/{id}?dryRun=true` released the lease, `POST /v1/leases?exclusive=true` granted a
  // shared one: a parameter that is not read must not let a request act as if it had been understood.
  it('is 400 invalid_request on acquire, renew, release and report, and changes nothing', async () => {
    await start([proxy('solo')]);
    const { body: lease } = await acquire({ ttlSeconds: 60 });
    const stored = async () =>
      (await db.collection('leases').get()).docs.map((d) => [
        d.id,
        d.updateTime.toMillis(),
        d.updateTime.nanoseconds,
      ]);
    const before = await stored();
    for (const [method, path, body] of [
      ['POST', '/v1/leases?exclusive=true', {}],
      ['POST', `/v1/leases/${lease.leaseId}/renew?ttlSeconds=600`, {}],
      ['DELETE', `/v1/leases/${lease.leaseId}?dryRun=true`, undefined],
      ['POST', `/v1/leases/${lease.leaseId}/report?result=banned`, { result: 'ok' }],
    ] as const) {
      expect(await call(method, path, body), `${method} ${path}`).toMatchObject({
        status: 400,
        body: { error: 'invalid_request', message: 'invalid query string' },
      });
    }
    expect(await stored()).toEqual(before);
    expect((await call('POST', `/v1/leases/${lease.leaseId}/renew`, {})).status).toBe(200);
  });
});

/** Renews until refused (409): the API's proxy view follows Firestore's listener, a moment behind. */
const refusedRenewal = (renew: () => ReturnType<typeof call>, id: string) =>
  pollUntil(renew, (r) => r.status === 409, 10_000, `renew of ${id} refused`);

describe('renewing a lease whose proxy is withdrawn', () => {
  it('409 proxy_withdrawn once its proxy is being deleted or joins the gateway pool; the lease runs out as granted', async () => {
    await start([proxy('going', { latencyMillis: 1 }), proxy('pooled', { latencyMillis: 2 })]);
    const { body: a } = await acquire({ ttlSeconds: 60, exclusive: true });
    const { body: b } = await acquire({ ttlSeconds: 60, exclusive: true });
    expect([a.proxy.name, b.proxy.name]).toEqual(['going', 'pooled']);
    const renew = (id: string) => call('POST', `/v1/leases/${id}/renew`, { ttlSeconds: 600 });
    expect((await renew(a.leaseId)).status).toBe(200);
    expect((await renew(b.leaseId)).status).toBe(200);
    const stored = async (id: string) => (await db.collection(LEASE_COLLECTIONS.leases).doc(id).get()).data();

    const proxies = db.collection('proxies');
    await proxies.doc('going').update({ deletionRequestedAt: Timestamp.fromDate(clock.now()) });
    await proxies.doc('pooled').update({ 'spec.gatewayPool': true });
    // The API's proxy view follows Firestore's listener: a renewal before it caught up still renews.
    for (const id of [a.leaseId, b.leaseId]) {
      const refused = await refusedRenewal(() => renew(id), id);
      expect(refused.body).toMatchObject({ error: 'proxy_withdrawn' });
      expect(refused.body.message).toMatch(/acquire a new one/);
    }
    // A refusal changes nothing: the lease is neither extended nor ended, and counts until it expires (or
    // is released) as its last renewal set.
    const before = await stored(a.leaseId);
    expect((await renew(a.leaseId)).status).toBe(409);
    const after = await stored(a.leaseId);
    expect(after?.releasedAt ?? null).toBeNull();
    expect(after?.renewals).toBe(before?.renewals);
    expect(after?.expiresAt).toEqual(before?.expiresAt);
    clock.advance(601_000);
    expect(await renew(a.leaseId)).toMatchObject({ status: 409, body: { error: 'lease_expired' } });
  });
});

describe('renewing a lease whose proxy moved to another address', () => {
  it('409 proxy_withdrawn once the proxy listens elsewhere (a VM re-created, an endpoint edited); the lease records where it was granted', async () => {
    await start([proxy('vm', { latencyMillis: 1 }), proxy('ext', { external: true, latencyMillis: 2 })]);
    const { body: a } = await acquire({ ttlSeconds: 60 });
    const { body: b } = await acquire({ ttlSeconds: 60 });
    expect([a.proxy.name, b.proxy.name]).toEqual(['vm', 'ext']);
    const stored = async (id: string) => (await db.collection(LEASE_COLLECTIONS.leases).doc(id).get()).data();
    expect((await stored(a.leaseId))?.endpoint).toBe('http://10.0.0.1:3128');
    expect((await stored(b.leaseId))?.endpoint).toBe('http://proxy.example:8080');
    const renew = (id: string) => call('POST', `/v1/leases/${id}/renew`, { ttlSeconds: 600 });

    expect((await renew(a.leaseId)).status).toBe(200);
    const proxies = db.collection('proxies');
    // Its new VM on another address (the uid kept, as a preemption or a rolling replacement keep it); the
    // external proxy's endpoint edited.
    await proxies.doc('vm').update({ 'status.ip': '10.0.0.2' });
    await proxies.doc('ext').update({ 'spec.endpoint.host': 'other.example', 'status.ip': 'other.example' });
    for (const id of [a.leaseId, b.leaseId]) {
      const refused = await refusedRenewal(() => renew(id), id);
      expect(refused.body).toMatchObject({ error: 'proxy_withdrawn' });
    }
    // A new lease on it records the new address, and renews.
    const { body: again } = await acquire({ ttlSeconds: 60 });
    expect(again.proxy.url).toContain('10.0.0.2:3128');
    expect((await stored(again.leaseId))?.endpoint).toBe('http://10.0.0.2:3128');
    expect((await renew(again.leaseId)).status).toBe(200);
  });
});

describe('renewing a lease on a reclaimed pool proxy while the ownership view re-subscribes', () => {
  // The API's ownership listener broke and is re-subscribing: whether the proxy is still reclaimed and
  // unowned is unknown, not known to be withdrawn. The emulator cannot break one listener, so the view is
  // put in the state its listener's onError leaves it in (ownership-gate.ts, lease-listener.ts).
  const breakView = (broken: boolean) => {
    const gate = api!.gate as unknown as { current: { ownership: boolean } };
    gate.current.ownership = !broken;
  };

  it('is 503 with Retry-After, nothing changed; once the view is back it renews', async () => {
    const pooled = proxy('pooled', { latencyMillis: 1 });
    await start([{ ...pooled, spec: { ...pooled.spec, gatewayPool: true } }, proxy('plain')]);
    await db
      .collection('reclaims')
      .doc('pooled')
      .set({
        proxy: 'pooled',
        requestedAt: Timestamp.fromDate(clock.now()),
        requestedBy: 'admin',
        until: Timestamp.fromMillis(clock.now().getTime() + 3600_000),
      });
    // Until the API's views have seen the reclaim, an acquire gets `plain`: given back at once, so that
    // `plain` is free for the lease below however long the views take on a loaded machine.
    const a = await pollUntil(
      async () => {
        const r = await acquire({ ttlSeconds: 60, exclusive: true });
        if (r.status === 201 && r.body.proxy.name !== 'pooled') {
          await call('DELETE', `/v1/leases/${r.body.leaseId}`, undefined);
        }
        return r;
      },
      (r) => r.status === 201 && r.body.proxy.name === 'pooled',
      30_000,
      'the reclaimed pool proxy to be leased',
    );
    const b = await acquire({ ttlSeconds: 60, exclusive: true });
    expect(b.body.proxy.name).toBe('plain');
    const renew = (id: string) => call('POST', `/v1/leases/${id}/renew`, { ttlSeconds: 120 });
    const stored = async (id: string) => (await db.collection(LEASE_COLLECTIONS.leases).doc(id).get()).data();

    breakView(true);
    const before = await stored(a.body.leaseId);
    const refused = await renew(a.body.leaseId);
    expect(refused).toMatchObject({ status: 503, body: { error: 'unavailable' } });
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await stored(a.body.leaseId)).toEqual(before);
    // A proxy outside the pool keeps its last known answer: the planner never assigns one.
    expect((await renew(b.body.leaseId)).status).toBe(200);

    breakView(false);
    expect(await renew(a.body.leaseId)).toMatchObject({ status: 200, body: { ttlSeconds: 120 } });
    // An ended lease is what it is, whatever the view.
    breakView(true);
    clock.advance(120_000);
    expect(await renew(a.body.leaseId)).toMatchObject({ status: 409, body: { error: 'lease_expired' } });
  });
});

describe('POST /v1/leases/{id}/report', () => {
  it('ok → 204 and nothing else; rate_limited cools (proxy, lease target) down for the window', async () => {
    await start([proxy('a', { latencyMillis: 1 }), proxy('b', { latencyMillis: 2 })]);
    const { body: lease } = await acquire({ target: 'shop.example' });
    expect(lease.proxy.name).toBe('a');
    expect((await call('POST', `/v1/leases/${lease.leaseId}/report`, { result: 'ok' })).status).toBe(204);
    expect((await db.collection(LEASE_COLLECTIONS.cooldowns).get()).size).toBe(0);

    const reportedAt = clock.now().getTime();
    expect(
      (await call('POST', `/v1/leases/${lease.leaseId}/report`, { result: 'rate_limited' })).status,
    ).toBe(204);
    await call('DELETE', `/v1/leases/${lease.leaseId}`);
    const again = await acquire({ target: 'shop.example', selector: {} });
    expect(again.body.proxy.name).toBe('b');
    await call('DELETE', `/v1/leases/${again.body.leaseId}`);
    expect((await acquire({ target: 'other.example' })).body.proxy.name).toBe('a');
    expect(await acquire({ target: 'shop.example', exclusive: true })).toMatchObject({ status: 201 });
    // Refused while `a` cools down for the target: the answer says when it is leasable again.
    clock.advance(30_000);
    const refused = await acquire({ target: 'shop.example', exclusive: true });
    expect(refused).toMatchObject({
      status: 409,
      body: {
        considered: 2,
        inCooldown: 1,
        atCapacity: 1,
        cooldownEndsAt: new Date(reportedAt + WINDOW_S * 1000).toISOString(),
      },
    });
    expect(refused.headers.get('retry-after')).toBe(String(WINDOW_S - 30));
    // Refused for capacity alone: no time to give (a holder lets go when it does).
    const full = await acquire({ target: 'other.example', exclusive: true });
    expect(full).toMatchObject({ status: 409, body: { inCooldown: 0, atCapacity: 2 } });
    expect(full.body.cooldownEndsAt).toBeUndefined();
    expect(full.headers.get('retry-after')).toBeNull();
    clock.advance(WINDOW_S * 1000 - 30_000);
    expect((await acquire({ target: 'shop.example' })).body.proxy.name).toBe('a');
  });

  // A report of the site's push-back on another lease of the proxy may commit while a new grant on it is
  // answered (here: during its credentials read). Selection had asked about cooldowns before; the answer
  // asks again as it leaves, so the grant is given back and another proxy leased.
  it('a cooldown that starts while a grant is answered: that proxy is given back, another one leased', async () => {
    const a = proxy('a', { latencyMillis: 1, capacity: 3 });
    await start([
      { ...a, spec: { ...a.spec, credentialsRef: { secret: 'withdrawn-a', version: 'latest' } } },
      proxy('b', { latencyMillis: 2 }),
    ]);
    const { body: first } = await acquire({ target: 'shop.example' });
    expect(first.proxy.name).toBe('a');
    whileReadingWithdrawn = async () => {
      whileReadingWithdrawn = null;
      const reported = await call('POST', `/v1/leases/${first.leaseId}/report`, { result: 'rate_limited' });
      expect(reported.status).toBe(204);
    };
    try {
      const second = await acquire({ target: 'shop.example' });
      expect(second).toMatchObject({ status: 201, body: { proxy: { name: 'b' } } });
      const active = (await db.collection(LEASE_COLLECTIONS.leases).get()).docs
        .filter((d) => d.get('releasedAt') === null)
        .map((d) => d.get('proxy'))
        .sort();
      expect(active).toEqual(['a', 'b']); // the first lease on a, and b's: the grant on a was given back
      // Another site is no concern of that cooldown.
      expect((await acquire({ target: 'other.example' })).body.proxy.name).toBe('a');
    } finally {
      whileReadingWithdrawn = null;
    }
  });

  it('a replay under its Idempotency-Key keeps its lease on a proxy its own report cooled down', async () => {
    await start([proxy('a', { latencyMillis: 1 }), proxy('b', { latencyMillis: 2 })]);
    const keyed = () =>
      call('POST', '/v1/leases', { target: 'shop.example' }, TOKEN, { 'idempotency-key': 'crawl-42' });
    const granted = await keyed();
    expect(granted).toMatchObject({ status: 201, body: { proxy: { name: 'a' } } });
    expect(
      (await call('POST', `/v1/leases/${granted.body.leaseId}/report`, { result: 'rate_limited' })).status,
    ).toBe(204);
    // The crawler lost the answer and sends the acquire again: the lease it may already hold, not another.
    expect(await keyed()).toMatchObject({
      status: 201,
      body: { leaseId: granted.body.leaseId, proxy: { name: 'a' } },
    });
    const lease = await db.collection(LEASE_COLLECTIONS.leases).doc(granted.body.leaseId).get();
    expect(lease.get('releasedAt')).toBeNull();
  });

  it('reports on a cooldown already running to about the same end write nothing: one document write per step', async () => {
    await start([proxy('a')]);
    const { body: lease } = await acquire({ target: 'shop.example' });
    const doc = async () => {
      const all = await db.collection(LEASE_COLLECTIONS.cooldowns).get();
      expect(all.size).toBe(1);
      return {
        until: (all.docs[0]!.get('until') as Timestamp).toMillis(),
        at: all.docs[0]!.updateTime!.toMillis(),
      };
    };
    const report = async () =>
      expect(
        (await call('POST', `/v1/leases/${lease.leaseId}/report`, { result: 'rate_limited' })).status,
      ).toBe(204);
    await report();
    const first = await doc();
    // A site answering 429 to every fetch: many reports inside a tenth of the window rewrite nothing.
    for (let i = 0; i < 5; i++) {
      clock.advance(1_000);
      await report();
    }
    expect(await doc()).toEqual(first);
    // Past a tenth of the window since the written end, the next report moves the end on.
    clock.advance((WINDOW_S * 1000) / 10);
    await report();
    const moved = await doc();
    expect(moved.until).toBe(clock.now().getTime() + WINDOW_S * 1000);
  });

  it('a lease reporting ever new targets starts cooldowns for COOLDOWN_SITES_PER_LEASE of them: the rest 204 too', async () => {
    await start([proxy('a')]);
    const { body: lease } = await acquire({});
    const targets = Array.from({ length: COOLDOWN_SITES_PER_LEASE + 3 }, (_, i) => `site-${i}.example`);
    for (const target of targets)
      expect(
        (await call('POST', `/v1/leases/${lease.leaseId}/report`, { result: 'rate_limited', target })).status,
      ).toBe(204);
    const stored = await db.collection(LEASE_COLLECTIONS.cooldowns).get();
    expect(stored.docs.map((d) => d.get('target')).toSorted()).toEqual(
      targets.slice(0, COOLDOWN_SITES_PER_LEASE).toSorted(),
    );
    // The proxy is not cooling down for the sites past the cap; a lease of its own may cool it down for one.
    const past = targets.at(-1)!;
    const next = await acquire({ target: past });
    expect(next).toMatchObject({ status: 201, body: { proxy: { name: 'a' } } });
    await call('POST', `/v1/leases/${next.body.leaseId}/report`, { result: 'banned' });
    expect(await acquire({ target: past })).toMatchObject({ status: 409, body: { inCooldown: 1 } });
    const text = await (
      await app.request('/metrics', { headers: { authorization: `Bearer ${TOKEN}` } })
    ).text();
    expect(text).toContain(
      `proxyplane_lease_requests_total{op="report",outcome="accepted"} ${COOLDOWN_SITES_PER_LEASE + 1}`,
    );
    expect(text).toContain('proxyplane_lease_requests_total{op="report",outcome="cooldown_capped"} 3');
  });

  it('past COOLDOWN_SITES_PER_LEASE sites, a banned report without a target still cools the proxy down', async () => {
    // The cap took the proxy-wide cooldown for one more site: 204 cooldown_capped, the banned proxy still
    // handed out.
    await start([proxy('a')]);
    const { body: lease } = await acquire({});
    for (let i = 0; i < COOLDOWN_SITES_PER_LEASE; i++)
      await call('POST', `/v1/leases/${lease.leaseId}/report`, {
        result: 'rate_limited',
        target: `site-${i}.example`,
      });
    expect((await call('POST', `/v1/leases/${lease.leaseId}/report`, { result: 'banned' })).status).toBe(204);
    expect(await acquire({})).toMatchObject({ status: 409, body: { inCooldown: 1 } });
    const text = await (
      await app.request('/metrics', { headers: { authorization: `Bearer ${TOKEN}` } })
    ).text();
    expect(text).not.toContain('outcome="cooldown_capped"');
  });

  it('a report reads its lease once: for a site new to it, one it cooled down already, one past the cap', async () => {
    // The report read the lease, then its cooldown's write read it again for the sites it had listed.
    const reads: FirestoreRead[] = [];
    await start(
      [proxy('a')],
      undefined,
      recordingFirestore(new Firestore({ projectId }), reads, { documents: true }),
    );
    const { body: lease } = await acquire({});
    const report = async (target: string) => {
      reads.splice(0);
      expect(
        (await call('POST', `/v1/leases/${lease.leaseId}/report`, { result: 'rate_limited', target })).status,
      ).toBe(204);
      return reads.filter((r) => r.collection === LEASE_COLLECTIONS.leases).length;
    };
    expect(await report('site-0.example')).toBe(1);
    clock.advance((WINDOW_S * 1000) / 2); // the running cooldown now ends more than a step early: due again
    expect(await report('site-0.example')).toBe(1);
    for (let i = 1; i < COOLDOWN_SITES_PER_LEASE; i++) await report(`site-${i}.example`);
    expect(await report('one-more.example')).toBe(1);
    const text = await (
      await app.request('/metrics', { headers: { authorization: `Bearer ${TOKEN}` } })
    ).text();
    expect(text).toContain('proxyplane_lease_requests_total{op="report",outcome="cooldown_capped"} 1');
  });

  it('the report target wins, and without any target the cooldown is global', async () => {
    await start([proxy('a')]);
    const { body: lease } = await acquire({ target: 'shop.example' });
    await call('POST', `/v1/leases/${lease.leaseId}/report`, { result: 'banned', target: 'News.Example' });
    const { body: plain } = await acquire({});
    await call('DELETE', `/v1/leases/${lease.leaseId}`);
    await call('DELETE', `/v1/leases/${plain.leaseId}`);
    expect((await acquire({ target: 'shop.example' })).status).toBe(201);
    expect(await acquire({ target: 'news.example' })).toMatchObject({ status: 409, body: { inCooldown: 1 } });

    await call('POST', `/v1/leases/${plain.leaseId}/report`, { result: 'rate_limited' });
    expect(await acquire({})).toMatchObject({ status: 409, body: { inCooldown: 1 } });
    expect(await acquire({ target: 'any.example' })).toMatchObject({ status: 409, body: { inCooldown: 1 } });
    const cooldowns = await db.collection(LEASE_COLLECTIONS.cooldowns).get();
    expect(cooldowns.docs.map((d) => d.get('target')).sort()).toEqual(['*', 'news.example']);
    // Each cooldown carries its TTL field (Firestore deletes it at expireAt): a Timestamp at its end, ahead.
    for (const d of cooldowns.docs) {
      const expireAt = d.get('expireAt');
      expect(expireAt).toBeInstanceOf(Timestamp);
      expect(expireAt.toMillis()).toBe((d.get('until') as Timestamp).toMillis());
      expect(expireAt.toMillis()).toBeGreaterThan(clock.now().getTime());
    }
  });

  it('an IPv6 target as a URL writes it is leased, and its spellings share one cooldown', async () => {
    await start([proxy('a')]);
    const res = await acquire({ target: new URL('https://[2001:DB8:0::1]:8443/').host });
    expect(res).toMatchObject({ status: 201, body: { target: '[2001:db8::1]:8443' } });
    await call('POST', `/v1/leases/${res.body.leaseId}/report`, {
      result: 'rate_limited',
      target: '[2001:0db8:0:0:0:0:0:1]:8443',
    });
    await call('DELETE', `/v1/leases/${res.body.leaseId}`);
    expect(await acquire({ target: '[2001:db8::1]:8443' })).toMatchObject({
      status: 409,
      body: { inCooldown: 1 },
    });
    // A site is its host: the cooldown holds on its other ports, and the bare address, too.
    for (const other of ['[2001:db8::1]:443', '[2001:db8::1]', '2001:db8::1'])
      expect(await acquire({ target: other }), other).toMatchObject({ status: 409, body: { inCooldown: 1 } });
    expect((await acquire({ target: '[2001:db8::2]:8443' })).status).toBe(201);
    const cooldowns = await db.collection(LEASE_COLLECTIONS.cooldowns).get();
    expect(cooldowns.docs.map((d) => d.get('target'))).toEqual(['[2001:db8::1]']);
  });

  it("a host name's spellings (a URL's trailing dot, a port's leading zero) share one cooldown", async () => {
    await start([proxy('a')]);
    const res = await acquire({ target: new URL('https://Shop.Example.:8443/').host });
    expect(res).toMatchObject({ status: 201, body: { target: 'shop.example:8443' } });
    await call('POST', `/v1/leases/${res.body.leaseId}/report`, {
      result: 'rate_limited',
      target: 'shop.example:08443',
    });
    await call('DELETE', `/v1/leases/${res.body.leaseId}`);
    // A site is its host: whatever port a crawler names it with (a rate limit is on the proxy's address).
    for (const other of ['shop.example:8443', 'shop.example:443', 'shop.example', 'SHOP.example.'])
      expect(await acquire({ target: other }), other).toMatchObject({ status: 409, body: { inCooldown: 1 } });
    const cooldowns = await db.collection(LEASE_COLLECTIONS.cooldowns).get();
    expect(cooldowns.docs.map((d) => d.get('target'))).toEqual(['shop.example']);
  });

  it('a late report after expiry resolves inside the window (204) and not after it (404)', async () => {
    await start([proxy('a')]);
    const { body: lease } = await acquire({ ttlSeconds: 30, target: 'shop.example' });
    clock.advance(30_000 + WINDOW_S * 1000 - 1);
    expect(
      (await call('POST', `/v1/leases/${lease.leaseId}/report`, { result: 'rate_limited' })).status,
    ).toBe(204);
    clock.advance(1);
    expect(
      await call('POST', `/v1/leases/${lease.leaseId}/report`, { result: 'rate_limited' }),
    ).toMatchObject({
      status: 404,
      body: { error: 'unknown_lease' },
    });
    const stored = await db.collection(LEASE_COLLECTIONS.leases).doc(lease.leaseId).get();
    expect(stored.get('expireAt').toDate()).toEqual(new Date('2026-03-01T00:02:30.000Z'));
  });

  it.each([
    [{}, 'invalid_result'],
    [{ result: 'great' }, 'invalid_result'],
    [{ result: 'OK' }, 'invalid_result'],
    [{ result: 'ok', target: 7 }, 'invalid_request'],
    [{ result: 'ok', extra: 1 }, 'invalid_request'],
  ])('%j → 400 %s', async (body, error) => {
    await start([proxy('a')]);
    const { body: lease } = await acquire({});
    expect(await call('POST', `/v1/leases/${lease.leaseId}/report`, body)).toMatchObject({
      status: 400,
      body: { error },
    });
  });

  it('unknown or malformed ids → 404 unknown_lease', async () => {
    await start([]);
    for (const id of ['AAAAAAAAAAAAAAAAAAAAAA', 'x', '%00']) {
      expect(await call('POST', `/v1/leases/${id}/report`, { result: 'ok' })).toMatchObject({
        status: 404,
        body: { error: 'unknown_lease' },
      });
    }
  });
});

describe('service routes', () => {
  it('serves an OpenAPI 3.1 document of every route', async () => {
    await start([]);
    const { status, body } = await call('GET', '/openapi.json');
    expect(status).toBe(200);
    expect(body.openapi).toBe('3.1.0');
    expect(Object.keys(body.paths)).toEqual(
      expect.arrayContaining([
        '/v1/leases',
        '/v1/leases/{id}',
        '/v1/leases/{id}/renew',
        '/v1/leases/{id}/report',
        '/v1/proxies',
      ]),
    );
    expect(Object.keys(body.paths['/v1/leases'].post.responses).sort()).toEqual([
      '201',
      '400',
      '401',
      '403',
      '409',
      '413',
      '415',
      '422',
      '503',
    ]);
    expect(body.paths['/v1/proxies'].get.parameters.map((p: { name: string }) => p.name)).toContain(
      'healthy',
    );
    expect(body.components.schemas.ListedProxy).toBeDefined();
    expect(body.components.schemas.AcquireRequest.properties.ttlSeconds).toMatchObject({
      minimum: 5,
      maximum: 3600,
    });
  });

  it('declares 413 on every route: each one bounds its body, the routes that take none too', async () => {
    // A body-less route (DELETE, GET, POST …/reconcile) refuses a body with 400 unexpected_body — once the
    // 64 KiB limit in front of every route has let it through; a larger one is 413 there, on any route.
    await start([proxy('solo')]);
    const big = 'x'.repeat(70 * 1024);
    const tooLarge = async (method: string, path: string, token = TOKEN) => {
      const res = await app.request(path, {
        method,
        headers: { authorization: `Bearer ${token}` },
        body: big,
      });
      return { status: res.status, body: await res.json() };
    };
    const refused = { status: 413, body: { error: 'payload_too_large' } };
    expect(await tooLarge('DELETE', '/v1/leases/0123456789abcdef0123')).toMatchObject(refused);
    expect(await tooLarge('DELETE', '/v1/proxies/solo', ADMIN_TOKEN)).toMatchObject(refused);
    expect(await tooLarge('POST', '/v1/proxies/solo/reconcile', ADMIN_TOKEN)).toMatchObject(refused);
    const { body } = await call('GET', '/openapi.json');
    const missing: string[] = [];
    for (const [path, operations] of Object.entries(body.paths as Record<string, object>)) {
      for (const [method, op] of Object.entries(operations as Record<string, { responses: object }>)) {
        if (!('413' in op.responses)) missing.push(`${method.toUpperCase()} ${path}`);
      }
    }
    expect(missing).toEqual([]);
  });

  it('exports lease requests by outcome and active leases', async () => {
    await start([proxy('a', { capacity: 1 })]);
    await acquire({});
    await acquire({});
    await acquire({ ttlSeconds: -1 });
    const text = await (
      await app.request('/metrics', { headers: { authorization: `Bearer ${TOKEN}` } })
    ).text();
    expect(text).toContain('proxyplane_lease_requests_total{op="acquire",outcome="granted"} 1');
    expect(text).toContain('proxyplane_lease_requests_total{op="acquire",outcome="no_match"} 1');
    expect(text).toContain('proxyplane_lease_requests_total{op="acquire",outcome="invalid_request"} 1');
    expect(text).toContain('proxyplane_leases_active 1');
  });
});
