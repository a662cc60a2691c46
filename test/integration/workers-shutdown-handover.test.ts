// A gateway shutting down idle hands its proxies over at once (docs/gateway-control-plane.md § Runtime
// report; contract §4). An idle Cloud Run instance told to stop sends its `draining: true` report and its
// last one back to back, then exits: both reach the API before the pass the first one asks for has run,
// and no report follows. That pass must release what the worker owns to the others — there will be no
// report at a drain's epoch, nor one recent enough for a later pass, so a drain started there would only
// end when the worker's grant lapsed (minutes on GCP), the proxies serving no one meanwhile.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testProjectId } from '../support/emulators.js';
import {
  type ControlPlane,
  eventually,
  poolProxy,
  startControlPlane,
  type WorkerClient,
} from '../support/worker-client.js';

let plane: ControlPlane;
let a: WorkerClient;
let b: WorkerClient;
const NAMES = ['sh-0', 'sh-1', 'sh-2', 'sh-3'];

const owners = async () => (await plane.ownership.read()).records;

beforeAll(async () => {
  plane = await startControlPlane({
    projectId: testProjectId('demo-wsh'),
    workerIds: ['gw-a', 'gw-b'],
    // A grant far longer than the test: nothing here may move because a grant lapsed. No ticks either: the
    // only passes are those the API asks for (registrations, drains reported done, a worker shutting down).
    env: {
      OWNERSHIP_GRANT_SECONDS: '300',
      OWNERSHIP_RENEW_BEFORE_SECONDS: '60',
      WORKER_SESSION_TTL_SECONDS: '60',
      WORKER_REPORT_TTL_SECONDS: '20',
    },
  });
  for (const [i, name] of NAMES.entries()) await plane.proxies.create(poolProxy(name, i + 1));
  a = plane.client('gw-a');
  b = plane.client('gw-b');
  for (const w of [a, b]) {
    expect((await w.register()).status).toBe(200);
    w.startPull();
    w.startReporting(400);
  }
  // Each worker its share of the default route (two each), every drain of the balancing done.
  await eventually(
    async () => {
      const records = [...(await owners()).values()];
      return (
        a.current?.proxies.length === 2 &&
        b.current?.proxies.length === 2 &&
        records.length === 4 &&
        records.every((r) => r.drainEpoch === null) &&
        a.ackBound?.version === a.current.version &&
        b.ackBound?.version === b.current.version &&
        a.lastRuntime &&
        b.lastRuntime
      );
    },
    45_000,
    'two proxies on each worker, no drain under way',
  );
}, 120_000);

afterAll(async () => {
  await plane?.stop();
});

describe('a worker shutting down with nothing in flight', () => {
  it('has its proxies handed over by the pass its draining report asks for', async () => {
    const mine = a.current!.proxies.map((p) => p.name).sort();
    const { epoch } = await plane.ownership.read();
    // SIGTERM on an idle instance: no more snapshots pulled, the draining report, the last report, exit.
    a.stopReporting();
    await a.stopPull();
    a.draining = true;
    a.counts = [];
    expect((await a.report()).status).toBe(200);
    expect((await a.report()).status).toBe(200);
    // The first change of ownership after those two reports — whichever pass makes it: the one the draining
    // report asked for, or any other — is the hand-over itself, not a drain that no report will ever end.
    // (Polled every 20 ms; a pass takes far longer, so no epoch is missed.)
    const first = await eventually(
      async () => {
        const state = await plane.ownership.read();
        return state.epoch > epoch ? state : undefined;
      },
      15_000,
      'a pass after the draining reports',
      20,
    );
    expect(first.epoch).toBe(epoch + 1);
    for (const p of mine) expect(first.records.get(p)).toMatchObject({ owner: 'gw-b', drainEpoch: null });
    await eventually(() => b.current?.proxies.length === 4, 10_000, 'gw-b to carry every proxy of the pool');
    expect(b.current!.proxies.map((p) => p.name).sort()).toEqual(NAMES);
  });
});
