// Two workers (test clients speaking the protocol over HTTP and Pub/Sub) and ten gateway-pool proxies, with
// the API in-process and the snapshot function as its own process on the emulators:
//   - each proxy ends up owned by exactly one worker, and each worker's applied snapshot holds exactly its own;
//   - at no instant is a proxy usable in both workers' applied snapshots;
//   - a worker that stops reporting loses its proxies only after its grant (+ skew) has lapsed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testProjectId } from '../support/emulators.js';
import {
  type ControlPlane,
  eventually,
  poolProxy,
  runWorkers,
  settledOwners,
  startControlPlane,
  type WorkerClient,
} from '../support/worker-client.js';

const NAMES = Array.from({ length: 10 }, (_, i) => `gp-${i}`);
let plane: ControlPlane;
let a: WorkerClient;
let b: WorkerClient;
let overlaps: string[] = [];
let stopWatching = () => {};

const owners = () => settledOwners(plane);

beforeAll(async () => {
  plane = await startControlPlane({ projectId: testProjectId('demo-wo'), workerIds: ['gw-a', 'gw-b'] });
  for (const [i, name] of NAMES.entries()) await plane.proxies.create(poolProxy(name, i + 1));
  a = plane.client('gw-a');
  b = plane.client('gw-b');
  // The safety property, sampled throughout: never usable in two workers' snapshots at once.
  ({ overlaps, stopWatching } = await runWorkers([a, b], 500));
  plane.startTicking(1000);
}, 120_000);

afterAll(async () => {
  stopWatching();
  await plane?.stop();
});

describe('gateway ownership on the emulators', () => {
  it('assigns each of the ten proxies to exactly one worker, and each snapshot holds exactly its own', async () => {
    const final = await eventually(
      async () => {
        const o = await owners();
        const inA = new Set(a.current?.proxies.map((p) => p.name));
        const inB = new Set(b.current?.proxies.map((p) => p.name));
        const settled =
          o.size === 10 &&
          NAMES.every((n) => (o.get(n) === 'gw-a' ? inA.has(n) && !inB.has(n) : inB.has(n) && !inA.has(n)));
        return settled ? { o, inA, inB } : undefined;
      },
      45_000,
      'both workers to hold disjoint snapshots covering the pool',
    );
    expect(new Set(final.o.values())).toEqual(new Set(['gw-a', 'gw-b']));
    expect(final.inA.size + final.inB.size).toBe(10);
    // The snapshot carries the contract's fields: capacity, usableUntil before expiresAt, a secret reference.
    const p = a.current!.proxies[0]!;
    expect(p.capacity).toBe(4);
    expect(Date.parse(p.usableUntil)).toBe(Date.parse(p.expiresAt) - 1000);
    expect(p.credentialsRef).toEqual({ secret: `${p.name}-auth`, version: 'latest' });
    // Reports are accepted on the ACK bound.
    await eventually(() => a.lastRuntime !== null && b.lastRuntime !== null, 10_000, 'accepted reports');
    expect(overlaps).toEqual([]);
  });

  it('moves a silent worker’s proxies only after its grant has lapsed — never two owners', async () => {
    const before = await owners();
    const bs = NAMES.filter((n) => before.get(n) === 'gw-b');
    expect(bs.length).toBeGreaterThan(0);
    await b.stop(); // crashed: no more reports, no more ACKs
    const stoppedAt = Date.now();
    const moves = new Map<string, number>();
    await eventually(
      async () => {
        const o = await owners();
        for (const n of bs) if (o.get(n) === 'gw-a' && !moves.has(n)) moves.set(n, Date.now());
        return moves.size === bs.length;
      },
      45_000,
      'gw-a to own every proxy gw-b held',
      100,
    );
    const header = await plane.snapshots.header('gw-b');
    const lapse = header!.grantedUntil!.getTime() + 1000; // + CLOCK_SKEW_SECONDS
    for (const [n, at] of moves) {
      expect(at, `${n} moved before gw-b's grant lapsed`).toBeGreaterThanOrEqual(lapse);
    }
    expect(Math.min(...moves.values()) - stoppedAt).toBeGreaterThan(6000); // at least the session TTL
    await eventually(() => a.current?.proxies.length === 10 && a.current, 20_000, 'gw-a to hold all ten');
    expect(overlaps).toEqual([]);
  });
});
