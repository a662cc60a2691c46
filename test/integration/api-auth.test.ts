// Admin auth end to end: the API on a real socket, the real google-auth-library verification path (cert
// fetch over HTTP + RS256 check) against a local certs endpoint whose key we made at test time, and the
// Firestore adapter on the emulator. Without a valid credential nothing changes; a valid one works.
import { Firestore } from '@google-cloud/firestore';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../emulators/launcher/free-port.js';
import { buildAuthenticator } from '../../functions/api/src/auth/config.js';
import { GCLOUD_CLI_AUDIENCE } from '../../functions/api/src/auth/id-token-verifier.js';
import { type ApiServer, startApiServer } from '../../functions/api/src/server.js';
import {
  type CertsServer,
  googleClaims,
  newSigningKey,
  signJwt,
  startCertsServer,
} from '../../functions/api/src/testing/google-certs.js';
import { FirestoreProxyStore } from '../../shared/src/adapters/firestore/proxy-store.js';
import { memoryLogger } from '../../shared/src/adapters/log/json-logger.js';
import { systemClock } from '../../shared/src/ports/clock.js';
import { ObservedProxyStore } from '../../shared/src/testing/observed-proxy-store.js';
import { aProxy } from '../../shared/src/testing/proxy-fixtures.js';
import { RecordingReconcilePublisher } from '../../shared/src/testing/recording-publisher.js';
import { testProjectId } from '../support/emulators.js';

const SERVICE_URL = 'https://proxyplane-api-123456.us-central1.run.app';
const STATIC = 'ci-static-admin-token-0123456789';
const ADMIN = 'ops@example.com';
// credentialsRef: the default cloud-init needs it (the API refuses a managed spec that could never boot).
const managed = {
  mode: 'managed',
  zone: 'us-central1-a',
  credentialsRef: { secret: 'proxy-creds', version: 'latest' },
};

const google = newSigningKey('k1');
const rogue = newSigningKey('k1'); // same kid, different key: a forged signature
const now = () => Math.floor(Date.now() / 1000);
const token = (claims: Record<string, unknown>, header?: Record<string, unknown>, key = google) =>
  signJwt(key, claims, header);

const ROUTES: Array<[string, string, unknown?]> = [
  ['GET', '/openapi.json'],
  ['GET', '/v1/proxies'],
  ['POST', '/v1/proxies', { name: 'new-one', spec: managed }],
  ['GET', '/v1/proxies/seeded'],
  ['PUT', '/v1/proxies/seeded/spec', { ...managed, capacity: 9 }],
  ['PATCH', '/v1/proxies/seeded/spec', { capacity: 7 }],
  ['DELETE', '/v1/proxies/seeded'],
  ['POST', '/v1/proxies/seeded/reconcile'],
];

describe('admin auth on the running service', () => {
  const projectId = testProjectId('demo-apiauth');
  const db = new Firestore({ projectId });
  const store = new ObservedProxyStore(new FirestoreProxyStore(db));
  const publisher = new RecordingReconcilePublisher();
  const log = memoryLogger();
  let certs: CertsServer;
  let api: ApiServer;

  const send = (method: string, path: string, body: unknown, authorization?: string) =>
    fetch(`${api.url}${path}`, {
      method,
      headers: {
        ...(authorization === undefined ? {} : { authorization }),
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });

  beforeAll(async () => {
    certs = await startCertsServer([google]);
    const auth = buildAuthenticator(
      {
        mode: 'enforced',
        tokens: [{ name: 'ci', token: STATIC }],
        google: {
          emails: [ADMIN, 'robot@proj.iam.gserviceaccount.com'],
          domains: ['corp.example'],
          audiences: [SERVICE_URL, GCLOUD_CLI_AUDIENCE],
        },
        warnings: [],
      },
      { certsUrl: certs.url },
    );
    api = await startApiServer({ deps: { version: 't', store, publisher, clock: systemClock, auth, log } });
  });

  afterAll(async () => {
    await api?.close();
    await certs?.close();
    await db.terminate();
  });

  const seed = async () => {
    for (const p of await store.inner.list()) {
      const s = await store.inner.get(p.name);
      if (s) await store.inner.deleteDocument(p.name, s.version);
    }
    await store.inner.create(aProxy({ name: 'seeded' }));
    publisher.published.length = 0;
  };

  const unauthenticated: Array<[string, () => string | undefined]> = [
    ['no Authorization header', () => undefined],
    ['Basic credentials', () => 'Basic b3BzOnB3'],
    ['an unknown opaque token', () => 'Bearer not-a-known-token-0123456789'],
    ['a static token with one character changed', () => `Bearer ${STATIC.slice(0, -1)}x`],
    ['an expired ID token', () => `Bearer ${token({ ...googleClaims(ADMIN, SERVICE_URL, now() - 7200) })}`],
    [
      'an ID token for another audience',
      () => `Bearer ${token(googleClaims(ADMIN, 'https://other.run.app'))}`,
    ],
    [
      'an ID token from another issuer',
      () => `Bearer ${token({ ...googleClaims(ADMIN, SERVICE_URL), iss: 'https://evil.example.com' })}`,
    ],
    [
      'an ID token signed by another key',
      () => `Bearer ${token(googleClaims(ADMIN, SERVICE_URL), {}, rogue)}`,
    ],
    [
      'an ID token with an unknown key id',
      () => `Bearer ${token(googleClaims(ADMIN, SERVICE_URL), { kid: 'k9' })}`,
    ],
    [
      'an ID token with alg none',
      () => `Bearer ${token(googleClaims(ADMIN, SERVICE_URL), { alg: 'none' }).replace(/\.[^.]+$/, '.AAAA')}`,
    ],
    [
      'an ID token whose payload was swapped',
      () => {
        const [h, , s] = token(googleClaims('eve@example.com', SERVICE_URL)).split('.');
        const forged = Buffer.from(JSON.stringify(googleClaims(ADMIN, SERVICE_URL))).toString('base64url');
        return `Bearer ${h}.${forged}.${s}`;
      },
    ],
    [
      'an ID token valid for two days',
      () => `Bearer ${token({ ...googleClaims(ADMIN, SERVICE_URL), exp: now() + 2 * 86400 })}`,
    ],
  ];

  describe.each(unauthenticated)('with %s', (_label, credential) => {
    it.each(ROUTES)('%s %s is 401 and changes nothing', async (method, path, body) => {
      await seed();
      const before = await store.snapshot();
      const res = await send(method, path, body, credential());
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toMatch(/^Bearer/);
      expect(await res.json()).toMatchObject({ error: 'unauthenticated' });
      expect(await store.snapshot()).toEqual(before);
      expect(publisher.published).toEqual([]);
    });
  });

  const forbidden: Array<[string, () => string]> = [
    [
      'a valid ID token for an email not on the list',
      () => token(googleClaims('eve@example.com', SERVICE_URL)),
    ],
    [
      'a valid ID token whose email is unverified',
      () => token({ ...googleClaims(ADMIN, SERVICE_URL), email_verified: false }),
    ],
    [
      'a valid ID token without an email',
      () => token({ ...googleClaims(ADMIN, SERVICE_URL), email: undefined }),
    ],
    [
      'a consumer account whose address is in an admin domain (no hd claim)',
      () => token(googleClaims('mallory@corp.example', SERVICE_URL)),
    ],
  ];

  describe.each(forbidden)('with %s', (_label, idToken) => {
    it.each(ROUTES)('%s %s is 403 and changes nothing', async (method, path, body) => {
      await seed();
      const before = await store.snapshot();
      const res = await send(method, path, body, `Bearer ${idToken()}`);
      expect(res.status).toBe(403);
      expect(await res.json()).toMatchObject({ error: 'forbidden' });
      expect(await store.snapshot()).toEqual(before);
      expect(publisher.published).toEqual([]);
    });
  });

  it.each([
    ['an ID token for the service URL', () => token(googleClaims(ADMIN, SERVICE_URL))],
    [
      'a user ID token from gcloud (gcloud client id audience)',
      () => token(googleClaims(ADMIN, GCLOUD_CLI_AUDIENCE)),
    ],
    [
      'a service account ID token (upper-case email on the list)',
      () => token(googleClaims('Robot@proj.iam.gserviceaccount.com', SERVICE_URL)),
    ],
    [
      'a Workspace account of an admin domain (hd claim)',
      () => token({ ...googleClaims('anyone@corp.example', SERVICE_URL), hd: 'corp.example' }),
    ],
    ['a named static token', () => STATIC],
  ])('lets %s through every route', async (_label, credential) => {
    await seed();
    const statuses: number[] = [];
    for (const [method, path, body] of ROUTES)
      statuses.push((await send(method, path, body, `Bearer ${credential()}`)).status);
    expect(statuses).toEqual([200, 200, 201, 200, 200, 200, 202, 202]);
    expect(publisher.published.map((r) => r.reason)).toEqual([
      'created',
      'spec-changed',
      'spec-changed',
      'delete-requested',
      'manual',
    ]);
    expect((await store.inner.get('new-one'))?.proxy.generation).toBe(1);
  });

  it('fetched the certs once for all of that (Cache-Control honoured) and never logged a token', () => {
    expect(certs.fetches()).toBe(1);
    const logged = JSON.stringify(log.lines);
    expect(logged).not.toContain(STATIC);
    expect(logged).not.toMatch(/eyJ[A-Za-z0-9_-]{10,}/); // no JWT header or payload
    expect(log.lines.some((l) => l.principal === ADMIN)).toBe(true);
  });

  it('checks credentials before the body: 70 KB without one is 401 (and the connection serves on), with one 413', async () => {
    await seed();
    const writes = store.writeCalls.length;
    const big = { name: 'big-one', spec: { ...managed, image: 'x'.repeat(70_000) } };
    for (const credential of [undefined, 'Bearer not-a-known-token-0123456789']) {
      const res = await send('POST', '/v1/proxies', big, credential);
      expect(res.status).toBe(401);
      expect(await res.json()).toMatchObject({ error: 'unauthenticated' });
      // The unread body does not wedge a kept-alive connection: the next request is answered.
      expect((await send('GET', '/v1/proxies/seeded', undefined, `Bearer ${STATIC}`)).status).toBe(200);
    }
    const admin = await send('POST', '/v1/proxies', big, `Bearer ${STATIC}`);
    expect(admin.status).toBe(413);
    expect(await admin.json()).toMatchObject({ error: 'payload_too_large' });
    expect(store.writeCalls.slice(writes)).toEqual([]);
    expect(publisher.published).toEqual([]);
  });

  it('answers /healthz without credentials', async () => {
    const res = await fetch(`${api.url}/healthz`);
    expect(res.status).toBe(200);
  });

  it('answers 503 unavailable (not 401) when Google certs cannot be fetched, and changes nothing', async () => {
    const deadPort = await freePort();
    const auth = buildAuthenticator(
      {
        mode: 'enforced',
        tokens: [],
        google: { emails: [ADMIN], domains: [], audiences: [SERVICE_URL] },
        warnings: [],
      },
      { certsUrl: `http://127.0.0.1:${deadPort}/certs` },
    );
    const down = await startApiServer({
      deps: { version: 't', store, publisher, clock: systemClock, auth, log },
    });
    try {
      await seed();
      const before = await store.snapshot();
      const res = await fetch(`${down.url}/v1/proxies`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${token(googleClaims(ADMIN, SERVICE_URL))}`,
          'content-type': 'application/json',
        },
        body: JSON.stringify({ name: 'new-one', spec: managed }),
      });
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('5');
      expect(await res.json()).toMatchObject({ error: 'unavailable' });
      expect(await store.snapshot()).toEqual(before);
    } finally {
      await down.close();
    }
  });
});
