// Brief invariant 3: no lease is granted beyond a proxy's capacity, by any number of API replicas at
// once; a released lease is gone for good; release is idempotent.
// 200 concurrent clients, each call sent to a random one of 3 service processes, acquire (some
// exclusive), renew, report and release on 20 proxies of capacity 2 for 30 s. Checked from the stored
// leases afterwards: at no instant did a proxy carry more than 2 (an exclusive lease counting as 2), some
// exclusive leases were granted (else the run tested none), and every release a client saw answered is
// recorded. A call that lost its commit races past the API's bounded retries is answered `503` "lease
// store contended; retry" with Retry-After (docs/leases.md, docs/operations.md § Lease store
// unavailable): the designed answer under this much contention, which a crawler waits out and asks again.
// The clients here do the same, and such answers must stay rare.
import { Firestore } from '@google-cloud/firestore';
import { afterAll, describe, expect, it } from 'vitest';
import { LEASE_COLLECTIONS } from '../../shared/src/adapters/firestore/lease-collections.js';
import { testProjectId } from '../support/emulators.js';
import {
  type ApiProcess,
  peakUsage,
  proxy,
  startApiProcess,
  storedLeases,
  writeFleet,
} from '../support/leases.js';

const PROXIES = 20;
const CAPACITY = 2;
const CLIENTS = 200;
const REPLICAS = 3;
const RUN_MS = 30_000;
const TARGETS = ['a.example', 'b.example', 'c.example', 'd.example'];
// Exclusive acquires: one in twenty at random, and the first of every tenth client. Under this load a proxy
// is seldom empty once the clients are running (6 of 258 exclusive acquires granted with one in five at
// random; 1 to 4 of 20 first acquires when all 200 clients started at once on a loaded machine), so the
// other clients start only once the first of those 20 is answered: until then only exclusive acquires
// are in flight on the 20 empty proxies, so a lease is committed before any shared acquire is sent, and the
// shared acquires race the rest of the first wave on replicas whose views have not all seen it yet.
const EXCLUSIVE_SHARE = 0.05;
const EXCLUSIVE_FIRST_EVERY = 10;

const projectId = testProjectId();
const db = new Firestore({ projectId });
const TOKEN = 'invariant-token-0123456789';
const services: ApiProcess[] = [];

afterAll(async () => {
  await Promise.all(services.map((s) => s.stop()));
  await db.terminate();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Tally {
  granted: Set<string>;
  released: Set<string>;
  statuses: Map<string, number>;
  errors: string[];
  /** Calls answered 503 contended (no lease granted, nothing changed), retried after their Retry-After. */
  contended: number;
  /** Acquires whose answer was lost in transport: the store may or may not hold a lease for each. */
  unknownAcquires: number;
  /** Exclusive acquires answered (201 or 409). */
  exclusiveAsked: number;
  /** Exclusive first acquires granted (the first wave, on empty proxies). */
  exclusiveFirstGranted: number;
  transportErrors: string[];
}

type Answer =
  | { status: number; body: { leaseId?: string; message?: string } | null; retryAfterMs: number | null }
  | { status: 'transport' };

/**
 * The API's cue to ask again (functions/api/src/leases/http.ts leaseErrors): the call lost its commit
 * races past its bounded retries, and nothing was granted or changed. Any other 503 is still an error:
 * the emulator does not fail.
 */
const contended = (a: Answer): a is Answer & { retryAfterMs: number } =>
  a.status === 503 && a.retryAfterMs !== null && a.body?.message === 'lease store contended; retry';

async function client(
  deadline: number,
  tally: Tally,
  wave: { exclusiveFirst: boolean; started: Promise<void>; answered: () => void },
): Promise<void> {
  const once = async (method: string, path: string, body?: unknown): Promise<Answer> => {
    const base = services[Math.floor(Math.random() * services.length)]?.url;
    try {
      const res = await fetch(`${base}${path}`, {
        method,
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(60_000),
      });
      const text = await res.text();
      const retryAfter = Number(res.headers.get('retry-after') ?? Number.NaN);
      const key = `${method} ${path.replace(/\/v1\/leases\/[^/]+/, '/v1/leases/{id}')} ${res.status}`;
      tally.statuses.set(key, (tally.statuses.get(key) ?? 0) + 1);
      return {
        status: res.status,
        body: text ? JSON.parse(text) : null,
        retryAfterMs: Number.isFinite(retryAfter) ? retryAfter * 1000 : null,
      };
    } catch (err) {
      const cause = (err as { cause?: { code?: string; message?: string } }).cause;
      tally.transportErrors.push(
        `${method} ${path}: ${String(err)} (${cause?.code ?? ''} ${cause?.message ?? ''})`,
      );
      return { status: 'transport' };
    }
  };
  // Renew, report and release may be repeated safely, so a lost answer is simply asked again, and a
  // contended one once its Retry-After has passed.
  const repeatable = async (method: string, path: string, body?: unknown): Promise<Answer> => {
    let answer = await once(method, path, body);
    for (let i = 0; i < 3 && (answer.status === 'transport' || contended(answer)); i++) {
      if (contended(answer)) {
        tally.contended++;
        await sleep(answer.retryAfterMs);
      }
      answer = await once(method, path, body);
    }
    return answer;
  };
  if (!wave.exclusiveFirst) await wave.started;
  for (let first = wave.exclusiveFirst; Date.now() < deadline; first = false) {
    const target = TARGETS[Math.floor(Math.random() * TARGETS.length)];
    const exclusive = first || Math.random() < EXCLUSIVE_SHARE;
    const acquired = await once('POST', '/v1/leases', { ttlSeconds: 120, target, exclusive });
    if (exclusive && (acquired.status === 201 || acquired.status === 409)) tally.exclusiveAsked++;
    if (first && acquired.status === 201) tally.exclusiveFirstGranted++;
    if (first) wave.answered();
    if (acquired.status === 'transport') {
      tally.unknownAcquires++;
      continue;
    }
    if (contended(acquired)) {
      // No lease was granted (a contended acquire leaves none behind: the stored leases below would show
      // one nobody was answered with): wait as told, then acquire again, as a crawler does.
      tally.contended++;
      await sleep(acquired.retryAfterMs);
      continue;
    }
    if (acquired.status !== 201 || !acquired.body?.leaseId) {
      if (acquired.status !== 409)
        tally.errors.push(`acquire ${acquired.status} ${JSON.stringify(acquired.body)}`);
      await sleep(200 + Math.random() * 300);
      continue;
    }
    const id = acquired.body.leaseId;
    tally.granted.add(id);
    await sleep(Math.random() * 100);
    if (Math.random() < 0.1) {
      const renewed = await repeatable('POST', `/v1/leases/${id}/renew`, { ttlSeconds: 120 });
      if (renewed.status !== 200) tally.errors.push(`renew ${renewed.status}`);
    }
    const roll = Math.random();
    const result = roll < 0.9 ? 'ok' : roll < 0.95 ? 'rate_limited' : 'banned';
    const reported = await repeatable('POST', `/v1/leases/${id}/report`, { result });
    if (reported.status !== 204) tally.errors.push(`report ${reported.status}`);
    const released = await repeatable('DELETE', `/v1/leases/${id}`);
    if (released.status === 204) tally.released.add(id);
    else tally.errors.push(`release ${released.status}`);
    // Idempotent: a second release, likely through another replica, changes nothing.
    if (Math.random() < 0.1 && (await repeatable('DELETE', `/v1/leases/${id}`)).status !== 204) {
      tally.errors.push('second release not 204');
    }
  }
}

describe('invariant: never over capacity, whatever the replicas', () => {
  it(`${CLIENTS} clients × ${REPLICAS} processes × ${PROXIES} proxies of capacity ${CAPACITY} for ${RUN_MS / 1000} s`, {
    timeout: 240_000,
  }, async () => {
    await writeFleet(
      db,
      Array.from({ length: PROXIES }, (_, i) =>
        proxy(`p${String(i).padStart(2, '0')}`, { capacity: CAPACITY }),
      ),
    );
    const env = {
      GOOGLE_CLOUD_PROJECT: projectId,
      DISCOVERY_TOKENS: `inv:${TOKEN}`,
      LEASE_COOLDOWN_SECONDS: '2',
    };
    services.push(...(await Promise.all(Array.from({ length: REPLICAS }, () => startApiProcess(env)))));

    const tally: Tally = {
      granted: new Set(),
      released: new Set(),
      statuses: new Map(),
      errors: [],
      contended: 0,
      unknownAcquires: 0,
      exclusiveAsked: 0,
      exclusiveFirstGranted: 0,
      transportErrors: [],
    };
    const deadline = Date.now() + RUN_MS;
    let answered = () => {};
    const started = new Promise<void>((resolve) => {
      answered = resolve;
    });
    await Promise.all(
      Array.from({ length: CLIENTS }, (_, i) =>
        client(deadline, tally, { exclusiveFirst: i % EXCLUSIVE_FIRST_EVERY === 0, started, answered }),
      ),
    );
    console.log(`invariant run: ${tally.granted.size} leases granted`, Object.fromEntries(tally.statuses));

    expect(tally.errors).toEqual([]);
    expect(tally.granted.size).toBeGreaterThan(100);
    // Transport failures (a socket reset under this load) are tolerated but must stay rare.
    if (tally.transportErrors.length > 0) console.log('transport errors', tally.transportErrors);
    const requests = [...tally.statuses.values()].reduce((a, b) => a + b, 0);
    expect(tally.transportErrors.length).toBeLessThan(requests / 100);
    // Contended answers too: the API's own retries absorb nearly all the lost races (one acquire in
    // several hundred answered 503 on a loaded machine); one in a hundred would be an API giving up early.
    if (tally.contended > 0) console.log(`contended answers retried: ${tally.contended}`);
    expect(tally.contended).toBeLessThan(requests / 100);

    const leases = await storedLeases(db);
    // Every grant a client saw is stored. Anything else stored is an acquire whose answer was lost, or a
    // grant the API gave back before answering — its proxy started cooling down for the target while the
    // grant was made (another client's report; docs/leases.md): released at once, never handed out.
    const stored = new Set(leases.map((l) => l.id));
    expect([...tally.granted].filter((id) => !stored.has(id))).toEqual([]);
    const unseen = leases.filter((l) => !tally.granted.has(l.id));
    const givenBack = unseen.filter((l) => l.releasedAt !== null);
    if (givenBack.length > 0) console.log(`grants given back before their answer: ${givenBack.length}`);
    expect(unseen.length - givenBack.length).toBeLessThanOrEqual(tally.unknownAcquires);
    // Every release answered 204 is recorded, and every lease a client held was released.
    const released = new Set(
      leases.filter((l) => l.releasedAt !== null && tally.granted.has(l.id)).map((l) => l.id),
    );
    expect(released).toEqual(tally.released);
    expect(tally.released).toEqual(tally.granted);

    // Exclusive requests rarely find a proxy empty under this load; when one does, it weighs CAPACITY. A
    // run that granted none would have checked shared leases only.
    const exclusive = leases.filter((l) => l.exclusive).length;
    console.log(
      `exclusive leases granted: ${exclusive} of ${tally.exclusiveAsked} asked, ${tally.exclusiveFirstGranted} in the first wave`,
    );
    expect(exclusive).toBeGreaterThan(0);
    const peaks = peakUsage(leases, () => CAPACITY);
    const over = [...peaks].filter(([, peak]) => peak > CAPACITY);
    expect(over).toEqual([]);
    expect(Math.max(...peaks.values())).toBe(CAPACITY);

    // And the per-proxy state holds no active entry once everything is released.
    const states = await db.collection(LEASE_COLLECTIONS.leaseState).get();
    const now = Date.now();
    const leftover = states.docs.flatMap((d) =>
      (d.get('entries') as Array<{ leaseId: string; expiresAt: { toMillis(): number } }>)
        .filter((e) => e.expiresAt.toMillis() > now)
        .map((e) => `${d.id}:${e.leaseId}`),
    );
    // Those of acquires whose answer was lost (the grants given back are released).
    expect(leftover.length).toBe(unseen.length - givenBack.length);
  });
});
