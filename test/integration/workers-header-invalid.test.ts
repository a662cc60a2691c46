// A worker's snapshot header edited out of shape by hand (docs/gateway-control-plane.md § Errors). The
// runtime report is stored and answered — no revokeProxyIds, since the header's drains cannot be read —
// so the session stays live, and the next pass finds the worker and writes its header whole again. Before,
// the report was stored and then answered 500: the worker's retry was a replay, which skipped the pass
// request a drain's end asks for; refused before it was stored, nothing kept the session live for that pass.
// Its own plane: the ACKs of the worker's pull would read the header too, and fail, mid-window.
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
    projectId: testProjectId('demo-whi'),
    workerIds: ['gw-1'],
    // The pass below builds for live sessions only, and with the pull stopped only the one report keeps
    // this one: at 6 s a loaded run's tick came after it lapsed, and the header was never written again.
    env: { WORKER_SESSION_TTL_SECONDS: '60' },
  });
  await plane.proxies.create(poolProxy('ap-0', 1));
  w = await ackedWorker(plane, 'gw-1', 1);
  // No snapshot taken from here on: its ACK would read the broken header too, fail, and register again.
  await w.stopPull();
}, 120_000);

afterAll(async () => {
  await w?.stopPull();
  await plane?.stop();
});

describe('a snapshot header edited out of shape', () => {
  it('a report is stored and answered with no revokeProxyIds, and the next pass writes the header whole', async () => {
    const header = plane.firestore.doc('snapshots/gw-1');
    const worker = plane.firestore.doc('workers/gw-1');
    const version = (await header.get()).get('version');
    await header.update({ 'draining.ap-9': 'oops' });
    const before = (await worker.get()).get('validUntil');
    const r = await w.report({ counts: [] });
    expect(r).toMatchObject({ status: 200, body: { acceptedSequence: w.sequence, revokeProxyIds: [] } });
    expect((await worker.get()).get('lastReportSequence')).toBe(w.sequence);
    expect((await worker.get()).get('validUntil').toMillis()).toBeGreaterThan(before.toMillis());

    // The session live, the next pass builds the worker a new version, whose save writes the header whole.
    await plane.tick();
    await eventually(
      async () => {
        const h = (await header.get()).data()!;
        return h.version > version && h.draining['ap-9'] === undefined;
      },
      30_000,
      'the header written whole by the next pass',
    );
  }, 60_000);
});
