// A busy gateway whose drain outlasts its session still hands its proxies over with its last report
// (docs/gateway-control-plane.md § Runtime report). On SIGTERM it stops pulling and reports `draining: true`
// with its load; the pass that report asks for starts drains, which raises the epoch, so every later report
// of the worker — at the epoch it last ACKed — is refused `stale_epoch`, and none keeps the session alive.
// A drain longer than the session TTL (GATEWAY_DRAIN_TIMEOUT_MS raised) ends with the session lapsed: its
// idle last report must still be taken, or the proxies serve no one until the grant lapses.
import { setTimeout as sleep } from 'node:timers/promises';
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
const NAMES = ['sl-0', 'sl-1', 'sl-2', 'sl-3'];
// Long enough that the drain below starts (a pass asked for through Pub/Sub, 12 s allowed) and its stale_epoch
// and ACK replay land while the session lives: at 6 s a loaded run lapsed it first (session_expired).
const SESSION_TTL_S = 20;

const owners = async () => (await plane.ownership.read()).records;

beforeAll(async () => {
  plane = await startControlPlane({
    projectId: testProjectId('demo-wsl'),
    workerIds: ['gw-a', 'gw-b'],
    // A grant far longer than the test: nothing here may move because a grant lapsed. No ticks: the only
    // passes are those the API asks for (registrations, a worker shutting down, drains reported done).
    env: {
      OWNERSHIP_GRANT_SECONDS: '300',
      OWNERSHIP_RENEW_BEFORE_SECONDS: '60',
      // … and a max stale age such a grant's renewals (every 240 s or so) keep a steady worker under.
      WORKER_MAX_STALE_AGE_SECONDS: '300',
      WORKER_SESSION_TTL_SECONDS: String(SESSION_TTL_S),
    },
  });
  ({ a, b } = await twoBalancedWorkers(plane, NAMES));
}, 120_000);

afterAll(async () => {
  await plane?.stop();
});

describe('a busy worker shutting down whose drain outlasts its session', () => {
  it('has its proxies handed over by its idle last report, taken on the lapsed session', async () => {
    const mine = a.current!.proxies.map((p) => p.name).sort();
    // SIGTERM with a tunnel open: no more snapshots pulled, a draining report with the load.
    a.stopReporting();
    await a.stopPull();
    a.counts = [{ proxy: mine[0]!, active: 1, reserved: 0 }];
    a.draining = true;
    expect((await a.report()).status).toBe(200);
    const lastAccepted = Date.now();
    // The pass it asks for starts the drains (the epoch rises); the worker never ACKs that epoch.
    await eventually(
      async () => {
        const records = await owners();
        return mine.every((p) => records.get(p)?.owner === 'gw-a' && records.get(p)?.drainEpoch !== null);
      },
      12_000,
      "drains of gw-a's proxies under way",
    );
    expect((await a.report()).body).toMatchObject({ error: 'stale_epoch' });
    // An ACK of the bound the session holds, sent again (its first answer lost), is answered as the first
    // was though the epoch has risen since: refused stale_epoch, the worker gave its snapshot up and could
    // name no bound, and every report after, its last word too, was refused ack_bound_mismatch.
    const replay = await a.ack();
    expect([replay.status, replay.body]).toEqual([200, expect.objectContaining({ unchanged: true })]);
    // … without keeping the session alive: the lapse below comes on time.
    // The drain outlasts the session: past its TTL, a report with load is refused as the session's end.
    await sleep(lastAccepted + SESSION_TTL_S * 1000 + 500 - Date.now());
    expect((await a.report()).body).toMatchObject({ error: 'session_expired' });

    // Drained: the last word, idle, on the lapsed session. It is taken, and does not revive the session.
    a.counts = [];
    expect((await a.report()).status).toBe(200);
    a.counts = [{ proxy: mine[0]!, active: 1, reserved: 0 }];
    expect((await a.report()).body).toMatchObject({ error: 'session_expired' });

    // The pass the last report asks for hands the proxies over — minutes before the grant would lapse.
    await eventually(
      async () => {
        const records = await owners();
        return mine.every((p) => records.get(p)?.owner === 'gw-b' && records.get(p)?.drainEpoch === null);
      },
      15_000,
      "gw-a's proxies on gw-b",
    );
    await eventually(() => b.current?.proxies.length === 4, 10_000, 'gw-b to carry every proxy of the pool');
  }, 90_000);
});
