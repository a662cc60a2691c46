// revokeProxyIds while a drain is still pending (contract §4: a control signal that speeds a drain up).
// Starting a drain raises the ownership epoch, so until the owner has ACKed a snapshot of the new epoch —
// one that already leaves the proxy out — every runtime report it sends sits on a stale epoch and is
// refused (409 stale_epoch). That is the window in which the revocation can do anything, so the refusal
// carries the set too. The worker here stops pulling before the drain starts: its snapshot is late.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testProjectId } from '../support/emulators.js';
import {
  ackedWorker,
  type ControlPlane,
  eventually,
  poolProxy,
  startControlPlane,
  type WorkerClient,
} from '../support/worker-client.js';

let plane: ControlPlane;
let w: WorkerClient;

beforeAll(async () => {
  plane = await startControlPlane({
    projectId: testProjectId('demo-rv'),
    workerIds: ['gw-r'],
    // Nothing here tests a lapse, and with the pull stopped only the reports keep the session: at 6 s a
    // loaded run lapsed it during the drain's pass (409 session_expired, not stale_epoch).
    env: { WORKER_SESSION_TTL_SECONDS: '60' },
  });
  for (const [i, name] of ['rv-0', 'rv-1'].entries()) await plane.proxies.create(poolProxy(name, i + 1));
  w = await ackedWorker(plane, 'gw-r', 2, 30_000);
  expect((await w.report()).status).toBe(200);
}, 120_000);

afterAll(async () => {
  await plane?.stop();
});

describe('revokeProxyIds', () => {
  it('reach the owner on the reports refused as stale_epoch while its snapshot of the drain is late', async () => {
    await w.stopPull(); // the snapshot that drops rv-1 will not reach it
    const bound = w.ackBound!; // read once the pull's ACKs are answered (stopPull)
    const stored = (await plane.proxies.get('rv-1'))!;
    const spec = { ...stored.proxy.spec, gatewayPool: false };
    expect(await plane.proxies.replaceSpec('rv-1', spec, stored.version)).toBe('written');
    await plane.tick();
    await eventually(
      async () => (await plane.snapshots.header('gw-r'))?.draining['rv-1'] !== undefined,
      20_000,
      'the drain of rv-1 to start',
    );
    const r = await w.report({ counts: [{ proxy: 'rv-1', active: 1, reserved: 0 }] });
    expect(w.ackBound).toEqual(bound); // still on the snapshot that has rv-1
    expect(r.status).toBe(409);
    expect(r.body).toMatchObject({ error: 'stale_epoch', revokeProxyIds: ['rv-1'] });
  });
});
