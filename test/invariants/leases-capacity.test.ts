// Brief invariant 3: no lease is granted beyond a proxy's capacity, by any number of API replicas at
// once; a released lease is gone for good; release is idempotent.
// 200 concurrent clients, each call sent to a random one of 3 service processes, acquire (some
// exclusive), renew, report and release on 20 proxies of capacity 2 for 30 s. Checked from the stored
// leases afterwards: at no instant did a proxy carry more than 2 (an exclusive lease counting as 2), and
// every release a client saw answered is recorded.
import { Firestore } from '@google-cloud/firestore';
import { afterAll, describe, expect, it } from 'vitest';
import { LEASE_COLLECTIONS } from '../../shared/src/adapters/firestore/lease-collections.js';
import { testProjectId } from '../support/emulators.js';
import {
  type LeaseServiceProcess,
  peakUsage,
  proxy,
  startLeaseService,
  storedLeases,
  writeFleet,
} from '../support/leases.js';

const PROXIES = 20;
const CAPACITY = 2;
const CLIENTS = 200;
const REPLICAS = 3;
const RUN_MS = 30_000;
const TARGETS = ['a.example', 'b.example', 'c.example', 'd.example'];

const projectId = testProjectId();
const db = new Firestore({ projectId });
const TOKEN = 'invariant-token-0123456789';
const services: LeaseServiceProcess[] = [];

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
}

async function client(deadline: number, tally: Tally): Promise<void> {
  const call = async (method: string, path: string, body?: unknown) => {
    const base = services[Math.floor(Math.random() * services.length)]?.url;
    const res = await fetch(`${base}${path}`, {
      method,
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(60_000),
    });
    const text = await res.text();
    const key = `${method} ${path.replace(/\/v1\/leases\/[^/]+/, '/v1/leases/{id}')} ${res.status}`;
    tally.statuses.set(key, (tally.statuses.get(key) ?? 0) + 1);
    return { status: res.status, body: text ? JSON.parse(text) : null };
  };
  while (Date.now() < deadline) {
    try {
      const target = TARGETS[Math.floor(Math.random() * TARGETS.length)];
      const acquired = await call('POST', '/v1/leases', {
        ttlSeconds: 120,
        target,
        exclusive: Math.random() < 0.05,
      });
      if (acquired.status !== 201) {
        if (acquired.status !== 409)
          tally.errors.push(`acquire ${acquired.status} ${JSON.stringify(acquired.body)}`);
        await sleep(200 + Math.random() * 300);
        continue;
      }
      const id: string = acquired.body.leaseId;
      tally.granted.add(id);
      await sleep(Math.random() * 100);
      if (Math.random() < 0.1) {
        const renewed = await call('POST', `/v1/leases/${id}/renew`, { ttlSeconds: 120 });
        if (renewed.status !== 200)
          tally.errors.push(`renew ${renewed.status} ${JSON.stringify(renewed.body)}`);
      }
      const roll = Math.random();
      const result = roll < 0.9 ? 'ok' : roll < 0.95 ? 'rate_limited' : 'banned';
      const reported = await call('POST', `/v1/leases/${id}/report`, { result });
      if (reported.status !== 204) tally.errors.push(`report ${reported.status}`);
      const released = await call('DELETE', `/v1/leases/${id}`);
      if (released.status === 204) tally.released.add(id);
      else tally.errors.push(`release ${released.status}`);
      // Idempotent: a second release from another replica changes nothing.
      if (Math.random() < 0.1 && (await call('DELETE', `/v1/leases/${id}`)).status !== 204) {
        tally.errors.push('second release not 204');
      }
    } catch (err) {
      tally.errors.push(String(err));
      await sleep(500);
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
    services.push(...(await Promise.all(Array.from({ length: REPLICAS }, () => startLeaseService(env)))));

    const tally: Tally = { granted: new Set(), released: new Set(), statuses: new Map(), errors: [] };
    const deadline = Date.now() + RUN_MS;
    await Promise.all(Array.from({ length: CLIENTS }, () => client(deadline, tally)));
    console.log(`invariant run: ${tally.granted.size} leases granted`, Object.fromEntries(tally.statuses));

    expect(tally.errors).toEqual([]);
    expect(tally.granted.size).toBeGreaterThan(100);

    const leases = await storedLeases(db);
    // Every grant a client saw is stored, and nothing was stored that no client was given.
    expect(new Set(leases.map((l) => l.id))).toEqual(tally.granted);
    // Every release answered 204 is recorded; every lease was released (none merely expired).
    const released = new Set(leases.filter((l) => l.releasedAt !== null).map((l) => l.id));
    expect(released).toEqual(tally.released);
    expect(released.size).toBe(leases.length);

    // Exclusive requests rarely find a proxy empty under this load; when one does, it weighs CAPACITY.
    console.log(`exclusive leases granted: ${leases.filter((l) => l.exclusive).length}`);
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
    expect(leftover).toEqual([]);
  });
});
