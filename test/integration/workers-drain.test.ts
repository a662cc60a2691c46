// Drain under reported load (contract §4): taking a proxy out of the gateway pool — an admin spec change, or
// a reclaim for an exclusive lease — removes it from the owner's next snapshot, keeps the ownership while
// the owner still reports active/reserved counts on it, clears it only after a report shows zero, and only
// then does the lease service's gate call it leasable.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FirestoreOwnershipGate } from '../../shared/src/adapters/firestore/ownership-gate.js';
import { systemClock } from '../../shared/src/ports/clock.js';
import { testProjectId } from '../support/emulators.js';
import {
  type ControlPlane,
  eventually,
  poolProxy,
  snapshotPassAfter,
  startControlPlane,
  type WorkerClient,
} from '../support/worker-client.js';

let plane: ControlPlane;
let w: WorkerClient;
let gate: FirestoreOwnershipGate;
const NAMES = ['dp-0', 'dp-1', 'dp-2'];

const record = async (proxy: string) => (await plane.ownership.read()).records.get(proxy) ?? null;
const proxy = async (name: string) => (await plane.proxies.get(name))!.proxy;

beforeAll(async () => {
  plane = await startControlPlane({ projectId: testProjectId('demo-wd'), workerIds: ['gw-d'] });
  for (const [i, name] of NAMES.entries()) await plane.proxies.create(poolProxy(name, i + 1));
  gate = new FirestoreOwnershipGate(plane.firestore, systemClock).start();
  await gate.ready();
  w = plane.client('gw-d');
  expect((await w.register()).status).toBe(200);
  w.startPull();
  w.startReporting(400);
  plane.startTicking(1000);
  await eventually(
    () => w.current?.proxies.length === 3 && w.lastRuntime,
    45_000,
    'three proxies and an accepted report',
  );
}, 120_000);

/** `n` more reports accepted with the current (busy) counts, then a snapshot pass that started after them. */
async function busyReportsThenPass(n: number): Promise<void> {
  const from = w.acceptedReports.length;
  const counts = JSON.stringify(w.counts);
  await eventually(
    () => w.acceptedReports.slice(from).filter((r) => JSON.stringify(r.counts) === counts).length >= n,
    10_000,
    `${n} more busy reports`,
  );
  await snapshotPassAfter(plane.firestore, w.acceptedReports.at(-1)!.at);
}

afterAll(async () => {
  gate?.stop();
  await plane?.stop();
});

describe('drain', () => {
  it('an admin taking a proxy out of the pool: cleared only after the reported counts reach zero', async () => {
    w.counts = [{ proxy: 'dp-1', active: 2, reserved: 1 }];
    await eventually(() => w.lastRuntime && w.sequence > 3, 5_000, 'a report with load');
    expect(gate.leasable(await proxy('dp-1'))).toBe(false);

    const stored = (await plane.proxies.get('dp-1'))!;
    const spec = { ...stored.proxy.spec, gatewayPool: false };
    expect(await plane.proxies.replaceSpec('dp-1', spec, stored.version)).toBe('written');

    // Step 1: the next snapshot drops it; the owner is told to revoke it; ownership stays while busy.
    await eventually(
      () => w.current && !w.current.proxies.some((p) => p.name === 'dp-1'),
      20_000,
      'dp-1 to leave the snapshot',
    );
    await eventually(
      () => w.lastRuntime?.revokeProxyIds.includes('dp-1'),
      10_000,
      'revokeProxyIds to name dp-1',
    );
    const draining = await record('dp-1');
    expect(draining).toMatchObject({ owner: 'gw-d' });
    expect(draining!.drainEpoch).not.toBeNull();
    // Still reported busy: two more busy reports accepted, then a snapshot pass that read them — and the
    // ownership is not cleared, and it is not leasable.
    await busyReportsThenPass(2);
    expect(await record('dp-1')).toMatchObject({ owner: 'gw-d' });
    expect(gate.leasable(await proxy('dp-1'))).toBe(false);

    // Step 2–3: the counts reach zero → the ownership is cleared, and only now is it leasable.
    w.counts = [];
    const zeroFrom = w.acceptedReports.length;
    await eventually(async () => (await record('dp-1')) === null, 20_000, 'dp-1 ownership to clear');
    const clearedSeen = Date.now();
    // What cleared it was a report of zero (sent after the counts were emptied, before the clear was
    // seen), not anything else. Its answer may reach the client after the pass it asked for has cleared
    // the record: waited for.
    const zeroSent = () =>
      w.acceptedReports.slice(zeroFrom).filter((r) => r.counts.length === 0 && r.sentAt <= clearedSeen);
    await eventually(
      () => zeroSent().length > 0,
      5_000,
      'the report of zero sent before the clear, answered',
    );
    await eventually(
      async () => gate.leasable(await proxy('dp-1')),
      10_000,
      'the gate to call dp-1 leasable',
    );
    await eventually(
      () => w.lastRuntime && !w.lastRuntime.revokeProxyIds.includes('dp-1'),
      10_000,
      'the revocation to end',
    );
    // The others stay put.
    expect(w.current!.proxies.map((p) => p.name).sort()).toEqual(['dp-0', 'dp-2']);
  });

  it('a reclaim (for an exclusive lease) drains a pool proxy, and a pool proxy is leasable only once reclaimed and released', async () => {
    const dp2 = await proxy('dp-2');
    expect(gate.leasable(dp2)).toBe(false);
    w.counts = [{ proxy: 'dp-2', active: 1, reserved: 0 }];
    const busyFrom = w.acceptedReports.length;
    await eventually(
      () => w.acceptedReports.slice(busyFrom).some((r) => r.counts.some((c) => c.proxy === 'dp-2')),
      10_000,
      'a report of dp-2 busy',
    );
    const r = await plane.admin('POST', '/v1/gateway/reclaims/dp-2', { ttlSeconds: 600 });
    expect(r.status).toBe(201);
    await eventually(
      () => w.current && !w.current.proxies.some((p) => p.name === 'dp-2'),
      20_000,
      'dp-2 to leave the snapshot',
    );
    await busyReportsThenPass(2);
    expect(await record('dp-2')).toMatchObject({ owner: 'gw-d' });
    expect(gate.leasable(dp2)).toBe(false);
    w.counts = [];
    await eventually(async () => (await record('dp-2')) === null, 20_000, 'dp-2 ownership to clear');
    await eventually(() => gate.leasable(dp2), 10_000, 'the gate to call reclaimed dp-2 leasable');
    // Dropping the reclaim puts it back into the pool: owned again, not leasable.
    expect((await plane.admin('DELETE', '/v1/gateway/reclaims/dp-2')).status).toBe(204);
    await eventually(async () => (await record('dp-2'))?.owner === 'gw-d', 20_000, 'dp-2 to be owned again');
    await eventually(() => !gate.leasable(dp2), 10_000, 'the gate to refuse dp-2 again');
  });

  it('the ownership view judges usable capacity fail-closed', async () => {
    w.counts = [{ proxy: 'dp-0', active: 1, reserved: 1 }];
    const view = await eventually(
      async () => {
        const r = await plane.admin<{ proxies: Array<Record<string, unknown>> }>(
          'GET',
          '/v1/gateway/ownership',
        );
        const dp0 = r.body.proxies.find((p) => p.proxy === 'dp-0');
        return dp0?.usable === 2 ? r.body : undefined;
      },
      10_000,
      'dp-0 at capacity 4 − 2',
    );
    // dp-1 left the pool and its ownership is cleared: the gateway has nothing to say about it any more.
    expect(view.proxies.map((p) => p.proxy).sort()).toEqual(['dp-0', 'dp-2']);
    // The worker goes silent: its report expires (3 s) → zero usable capacity, not the last known.
    w.stopReporting();
    await eventually(
      async () => {
        const r = await plane.admin<{ proxies: Array<Record<string, unknown>> }>(
          'GET',
          '/v1/gateway/ownership',
        );
        const dp0 = r.body.proxies.find((p) => p.proxy === 'dp-0');
        return dp0?.usable === 0 && dp0.reason === 'report_expired';
      },
      10_000,
      'dp-0 to fail closed',
    );
    w.startReporting(400);
  });
});
