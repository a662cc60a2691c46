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
  startControlPlane,
  twoBalancedWorkers,
  type WorkerClient,
} from '../support/worker-client.js';

let plane: ControlPlane;
let a: WorkerClient;
let b: WorkerClient;
const NAMES = ['sh-0', 'sh-1', 'sh-2', 'sh-3'];

beforeAll(async () => {
  plane = await startControlPlane({
    projectId: testProjectId('demo-wsh'),
    workerIds: ['gw-a', 'gw-b'],
    // A grant far longer than the test: nothing here may move because a grant lapsed. No ticks either: the
    // only passes are those the API asks for (registrations, drains reported done, a worker shutting down).
    env: {
      OWNERSHIP_GRANT_SECONDS: '300',
      OWNERSHIP_RENEW_BEFORE_SECONDS: '60',
      // … and a max stale age such a grant's renewals (every 240 s or so) keep a steady worker under.
      WORKER_MAX_STALE_AGE_SECONDS: '300',
      WORKER_SESSION_TTL_SECONDS: '60',
      WORKER_REPORT_TTL_SECONDS: '20',
    },
  });
  ({ a, b } = await twoBalancedWorkers(plane, NAMES));
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
