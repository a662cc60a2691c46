// The per-address limit on failed authentication (functions/api/src/middleware/auth-failure-limit.ts) on
// the API served over a real socket, with the real admin authenticator — a forged Google identity token
// goes through google-auth-library's RS256 verification against a local certs endpoint — the lease API
// on the Firestore emulator and its /metrics. Behind Cloud Run's front end (one trusted X-Forwarded-For
// hop): an address that sends bad credentials gets 401 until its burst is spent, then 429 rate_limited
// with Retry-After before its credential is checked — a valid one too, unless this instance has accepted
// it before, and nothing is written — counted as
// proxyplane_rate_limited_total{class="auth-failure"}; another address is unaffected, and entries the
// client puts in front of X-Forwarded-For change nothing. Without a front end the socket's peer is the
// address and the header is ignored. A credential the instance accepted before passes an empty bucket
// (checked as usual), while one it has not waits. And the service as main.ts builds it (loadApiConfig → wireApi) has
// the limit on, from RATE_LIMIT_AUTH_FAILURE, trusting X-Forwarded-For's last entry where K_SERVICE is set.
import { request } from 'node:http';
import { Firestore } from '@google-cloud/firestore';
import { Registry } from 'prom-client';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { ApiDeps } from '../../functions/api/src/app.js';
import type { Authenticator } from '../../functions/api/src/auth/authenticator.js';
import { buildAuthenticator } from '../../functions/api/src/auth/config.js';
import { loadApiConfig } from '../../functions/api/src/config.js';
import { buildLeaseApi, type LeaseApiRuntime } from '../../functions/api/src/leases/wiring.js';
import { promRateLimitRefusals } from '../../functions/api/src/middleware/rate-limit-metrics.js';
import { type ApiServer, startApiServer } from '../../functions/api/src/server.js';
import {
  type CertsServer,
  googleClaims,
  newSigningKey,
  signJwt,
  startCertsServer,
} from '../../functions/api/src/testing/google-certs.js';
import { wireApi } from '../../functions/api/src/wiring.js';
import { FirestoreProxyStore } from '../../shared/src/adapters/firestore/proxy-store.js';
import { memoryLogger } from '../../shared/src/adapters/log/json-logger.js';
import { systemClock } from '../../shared/src/ports/clock.js';
import { RecordingReconcilePublisher } from '../../shared/src/testing/recording-publisher.js';
import { releaseProject, testProjectId } from '../support/emulators.js';

const SERVICE_URL = 'https://proxyplane-api-123456.us-central1.run.app';
const ADMIN = 'ci-static-admin-token-0123456789';
const CRAWLER = 'crawler-token-authlimit-0123456';
const google = newSigningKey('k1');
const rogue = newSigningKey('k1'); // same kid, another key: a forged signature
const forged = () => signJwt(rogue, googleClaims('ops@example.com', SERVICE_URL));
const managed = {
  mode: 'managed',
  zone: 'us-central1-a',
  credentialsRef: { secret: 'proxy-creds', version: 'latest' },
};

const projectId = testProjectId('demo-authlimit');
const db = new Firestore({ projectId });
let certs: CertsServer;
let started: Array<{ api: ApiServer; leases: LeaseApiRuntime }> = [];

beforeAll(async () => {
  certs = await startCertsServer([google]);
});
afterEach(async () => {
  for (const s of started) {
    await s.api.close();
    await s.leases.stop();
  }
  started = [];
});
afterAll(async () => {
  await certs?.close();
  await db.terminate();
  await releaseProject(projectId);
});

/** The API with the limit at 1 a second, burst 3, on a clock the test moves; `checks` counts credential checks. */
async function serve(trustedHops: number, host = '127.0.0.1') {
  let nowMs = 0;
  let checks = 0;
  const log = memoryLogger();
  const registry = new Registry();
  const refusals = promRateLimitRefusals(registry);
  const real = buildAuthenticator(
    {
      mode: 'enforced',
      tokens: [{ name: 'ci', token: ADMIN }],
      google: { emails: ['ops@example.com'], domains: [], audiences: [SERVICE_URL] },
      warnings: [],
    },
    { certsUrl: certs.url },
  );
  const auth: Authenticator = {
    description: real.description,
    authenticate: (token) => {
      checks++;
      return real.authenticate(token);
    },
  };
  const leases = buildLeaseApi({
    firestore: db,
    secrets: { access: async () => Promise.reject(new Error('no secrets here')) },
    clock: systemClock,
    monotonicNow: () => performance.now(),
    registry,
    log,
    config: { tokens: [{ name: 'fleet', token: CRAWLER }], cooldownWindowMs: 60_000, credentialsCacheMs: 0 },
  });
  const deps: ApiDeps = {
    version: 't',
    store: new FirestoreProxyStore(db),
    publisher: new RecordingReconcilePublisher(),
    clock: systemClock,
    auth,
    log,
    leases,
    authFailureLimit: {
      rate: { perSecond: 1, burst: 3 },
      now: () => nowMs,
      trustedHops,
      refused: () => refusals('auth-failure'),
      log,
    },
  };
  const api = await startApiServer({ host, deps });
  started.push({ api, leases });
  return {
    api,
    log,
    checks: () => checks,
    advance: (ms: number) => {
      nowMs += ms;
    },
  };
}

interface Answer {
  status: number;
  retryAfter: string | undefined;
  body: string;
}

/** One request over its own connection, from `localAddress` when given. */
function send(
  api: ApiServer,
  method: string,
  path: string,
  headers: Record<string, string>,
  opts: { body?: unknown; localAddress?: string } = {},
): Promise<Answer> {
  const body = opts.body === undefined ? undefined : JSON.stringify(opts.body);
  return new Promise((resolve, reject) => {
    const req = request(
      `${api.url}${path}`,
      {
        method,
        agent: false,
        localAddress: opts.localAddress,
        headers: { ...headers, ...(body ? { 'content-type': 'application/json' } : {}) },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          text += chunk;
        });
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, retryAfter: res.headers['retry-after'], body: text }),
        );
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

describe('failed authentication limited per address, behind Cloud Run (the last X-Forwarded-For entry)', () => {
  it('401 for the burst, then 429 with Retry-After before the credential is checked; counted; others unaffected', async () => {
    const h = await serve(1);
    // The same client behind a different spoofed prefix every time: one address all the same.
    const from = (i: number) => ({ 'x-forwarded-for': `10.9.${i}.1, 192.0.2.${i}, 203.0.113.7` });
    for (let i = 0; i < 3; i++) {
      const res = await send(h.api, 'GET', '/v1/proxies', { ...from(i), ...bearer(forged()) });
      expect(res.status).toBe(401);
    }
    expect(h.checks()).toBe(3);

    const refused = await send(h.api, 'GET', '/v1/proxies', { ...from(7), ...bearer(forged()) });
    expect(refused.status).toBe(429);
    expect(refused.retryAfter).toBe('1');
    expect(JSON.parse(refused.body)).toEqual({
      error: 'rate_limited',
      message: 'too many failed authentications from this address; retry after 1 s',
    });
    // A valid credential from that address is refused too, unchecked, and its write never happens.
    const body = { name: 'while-limited', spec: managed };
    const write = await send(h.api, 'POST', '/v1/proxies', { ...from(8), ...bearer(ADMIN) }, { body });
    expect(write.status).toBe(429);
    expect((await db.collection('proxies').doc('while-limited').get()).exists).toBe(false);
    expect(h.checks()).toBe(3);
    // /healthz is never refused.
    expect((await send(h.api, 'GET', '/healthz', from(9))).status).toBe(200);

    // Another address — including the ones the client wrote in front — is untouched.
    const other = { 'x-forwarded-for': '203.0.113.7, 198.51.100.20' };
    expect((await send(h.api, 'GET', '/v1/proxies', { ...other, ...bearer(CRAWLER) })).status).toBe(200);
    expect((await send(h.api, 'GET', '/v1/proxies', { ...other, ...bearer(forged()) })).status).toBe(401);
    const metrics = await send(h.api, 'GET', '/metrics', { ...other, ...bearer(ADMIN) });
    expect(metrics.status).toBe(200);
    expect(metrics.body).toContain('proxyplane_rate_limited_total{class="auth-failure"} 2');
    expect(metrics.body).toContain('proxyplane_rate_limited_total{class="lease-acquire"} 0');

    // One WARNING for the two refusals, naming the address; the request log has no line for either.
    const lines = h.log.lines.filter((l) => String(l.message).startsWith('refusing requests'));
    expect(lines).toEqual([expect.objectContaining({ severity: 'WARNING', source: '203.0.113.7' })]);
    expect(h.log.lines.filter((l) => String(l.message).endsWith(' 429'))).toEqual([]);

    // A second later the address has a token again: its valid credential goes through, and spends nothing.
    h.advance(1000);
    for (let i = 0; i < 3; i++) {
      expect((await send(h.api, 'GET', '/v1/proxies', { ...from(i), ...bearer(ADMIN) })).status).toBe(200);
    }
  });
});

describe('a credential the instance accepted before, behind an address someone else emptied', () => {
  it('passes, checked as usual (a Google identity token, RS256-verified each time); a new one waits', async () => {
    const h = await serve(1);
    const nat = { 'x-forwarded-for': '203.0.113.40' }; // one Cloud NAT address, shared
    const identity = signJwt(google, googleClaims('ops@example.com', SERVICE_URL));
    expect((await send(h.api, 'GET', '/v1/proxies', { ...nat, ...bearer(identity) })).status).toBe(200);
    // a stranger behind the same address spends the burst with forged tokens
    for (let i = 0; i < 3; i++) {
      expect((await send(h.api, 'GET', '/v1/proxies', { ...nat, ...bearer(forged()) })).status).toBe(401);
    }
    expect((await send(h.api, 'GET', '/v1/proxies', { ...nat, ...bearer(forged()) })).status).toBe(429);
    const checked = h.checks();
    const body = { name: 'known-writes', spec: managed };
    const write = await send(h.api, 'POST', '/v1/proxies', { ...nat, ...bearer(identity) }, { body });
    expect(write.status).toBe(201);
    expect((await db.collection('proxies').doc('known-writes').get()).exists).toBe(true);
    expect(h.checks()).toBe(checked + 1); // verified again, not taken on trust
    // …while a credential this instance has not accepted yet — valid or not — is refused unchecked
    expect((await send(h.api, 'GET', '/v1/proxies', { ...nat, ...bearer(CRAWLER) })).status).toBe(429);
    expect((await send(h.api, 'GET', '/v1/proxies', { ...nat, ...bearer(ADMIN) })).status).toBe(429);
    expect(h.checks()).toBe(checked + 1);
  });
});

describe('failed authentication limited per address, without a front end (the socket peer)', () => {
  it('ignores X-Forwarded-For: a client cannot pick its bucket; another peer address is unaffected', async () => {
    const h = await serve(0, '0.0.0.0');
    for (let i = 0; i < 3; i++) {
      const spoofed = { 'x-forwarded-for': `203.0.113.${i}`, ...bearer('not-a-token-of-this-service') };
      expect((await send(h.api, 'GET', '/v1/proxies', spoofed, { localAddress: '127.0.0.1' })).status).toBe(
        401,
      );
    }
    const again = { 'x-forwarded-for': '203.0.113.99', ...bearer(ADMIN) };
    const res = await send(h.api, 'GET', '/v1/proxies', again, { localAddress: '127.0.0.1' });
    expect(res.status).toBe(429);
    expect(res.retryAfter).toBe('1');
    const elsewhere = { localAddress: '127.0.0.2' };
    expect((await send(h.api, 'GET', '/v1/proxies', bearer(ADMIN), elsewhere)).status).toBe(200);
    expect((await send(h.api, 'GET', '/v1/proxies', bearer('nope-nope-nope-nope'), elsewhere)).status).toBe(
      401,
    );
  });
});

describe('as main.ts builds the service (loadApiConfig → wireApi)', () => {
  it('on Cloud Run (K_SERVICE set) the limit is on, from RATE_LIMIT_AUTH_FAILURE, keyed on the last X-Forwarded-For entry', async () => {
    const config = loadApiConfig({
      GOOGLE_CLOUD_PROJECT: projectId,
      FIRESTORE_EMULATOR_HOST: process.env.FIRESTORE_EMULATOR_HOST,
      PUBSUB_EMULATOR_HOST: process.env.PUBSUB_EMULATOR_HOST,
      PROXYPLANE_LOCAL: '1',
      K_SERVICE: 'proxyplane-api',
      ADMIN_TOKENS: `ci:${ADMIN}`,
      DISCOVERY_TOKENS: `fleet:${CRAWLER}`,
      RATE_LIMIT_AUTH_FAILURE: '0.01:2',
      LOG_LEVEL: 'error',
    });
    const wired = wireApi(config, memoryLogger());
    const api = await startApiServer({ deps: wired.deps });
    try {
      const from = (spoofed: string) => ({ 'x-forwarded-for': `${spoofed}, 203.0.113.70` });
      for (const spoofed of ['10.0.0.1', '10.0.0.2']) {
        const res = await send(api, 'GET', '/v1/proxies', {
          ...from(spoofed),
          ...bearer('wrong-token-0123456789'),
        });
        expect(res.status).toBe(401);
      }
      const refused = await send(api, 'GET', '/v1/proxies', { ...from('10.0.0.3'), ...bearer(CRAWLER) });
      expect(refused.status).toBe(429);
      expect(Number(refused.retryAfter)).toBeGreaterThan(1);
      const other = { 'x-forwarded-for': '198.51.100.70', ...bearer(ADMIN) };
      const metrics = await send(api, 'GET', '/metrics', other);
      expect(metrics.status).toBe(200);
      expect(metrics.body).toContain('proxyplane_rate_limited_total{class="auth-failure"} 1');
    } finally {
      await api.close();
      await wired.close();
    }
  });
});
