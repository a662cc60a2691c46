// A worker that stops taking its snapshots but goes on reporting (its pull broken, a snapshot it cannot
// build, a process half wedged) hands its proxies over once its grant lapses (docs/gateway-control-plane.md
// § A worker that stops taking snapshots). Its reports are on the bound it last ACKed, which the API
// accepts, so its session stays live: the planner kept it as owner and renewed its grant in every snapshot
// it did not take, and its proxies served no one for as long as it reported. Now the ACK it owes is
// recorded with its snapshot header; owed past max_stale_age (10 s here), it is given nothing and its
// grant is not renewed, so its proxies move — never before the grant it was given has lapsed (+ skew).
// API in-process, the snapshot function as its own process, on the emulators; FAST_SETTINGS' timings.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testProjectId } from '../support/emulators.js';
import {
  type ControlPlane,
  eventually,
  settledOwners,
  startControlPlane,
  twoBalancedWorkers,
  type WorkerClient,
} from '../support/worker-client.js';

let plane: ControlPlane;
let a: WorkerClient;
let b: WorkerClient;
const NAMES = ['st-0', 'st-1', 'st-2', 'st-3'];
const overlaps: string[] = [];
let watcher: NodeJS.Timeout | undefined;

beforeAll(async () => {
  plane = await startControlPlane({
    projectId: testProjectId('demo-wst'),
    workerIds: ['gw-a', 'gw-b'],
    // gw-b is withheld only while another worker takes its snapshots (plan-pass.ts overdueWorkers): one
    // owing nothing older than the resend period. At FAST_SETTINGS' 3 s, gw-a's ACK of a renewal lagging
    // that long on a loaded run counted it as not taking, and gw-b's grant was renewed once more.
    env: { SNAPSHOT_RESEND_AFTER_SECONDS: '8' },
  });
  plane.startTicking(1000);
  ({ a, b } = await twoBalancedWorkers(plane, NAMES));
  // The safety property, sampled throughout: never usable in both workers' applied snapshots at once.
  watcher = setInterval(() => {
    const now = Date.now();
    const inA = a.usableAt(now);
    for (const p of b.usableAt(now)) if (inA.has(p)) overlaps.push(p);
  }, 50);
}, 120_000);

afterAll(async () => {
  clearInterval(watcher);
  await plane?.stop();
});

const owners = () => settledOwners(plane);

describe('a worker that stops taking its snapshots but still reports', () => {
  it('loses its proxies once its grant lapses, never before, and takes a share again when it pulls', async () => {
    const mine = b.current!.proxies.map((p) => p.name);
    expect(mine).toHaveLength(2);
    await b.stopPull(); // no more snapshots taken, no more ACKs; its reports go on every 400 ms
    const stalledAt = Date.now();
    const moves = new Map<string, number>();
    await eventually(
      async () => {
        const o = await owners();
        for (const n of mine) if (o.get(n) === 'gw-a' && !moves.has(n)) moves.set(n, Date.now());
        return moves.size === mine.length;
      },
      60_000,
      'gw-a to own the proxies gw-b stopped taking snapshots for',
      100,
    );
    // Its session was live and its reports accepted well past the session TTL (6 s) after it stalled: the
    // case where nothing moved before.
    expect(b.acceptedReports.some((r) => r.at > stalledAt + 6_000)).toBe(true);
    // Moved only after the grant the controller recorded for it — the latest it ever sent — plus the skew.
    const header = await plane.snapshots.header('gw-b');
    const lapse = header!.grantedUntil!.getTime() + 1000;
    for (const [n, at] of moves)
      expect(at, `${n} moved before gw-b's grant lapsed`).toBeGreaterThanOrEqual(lapse);
    // And the grant was no longer renewed once the ACK was owed past max_stale_age (10 s): the last renewal
    // came from a pass less than 10 s after the owed version was saved, and grants 8 s — both on the pass's
    // clock. (Counted from stalledAt instead, the debt starts up to one renewal gap later — 4–5 s when
    // passes are slow — and two gaps could pass the bound with the rule kept.) With renewals, it would
    // still run 5–8 s ahead of now.
    const owed = header!.ackOwed;
    expect(owed, 'the ACK gw-b owes, recorded with its header').toBeTruthy();
    expect(header!.grantedUntil!.getTime()).toBeLessThan(owed!.since.getTime() + 10_000 + 8_000);
    await eventually(() => a.current?.proxies.length === 4, 20_000, 'gw-a to serve all four');

    // It pulls again: its session lapsed meanwhile (its reports refused once the drain moved the epoch), so
    // it registers again, takes the latest snapshot, ACKs, and is given its share.
    b.startPull();
    await eventually(
      () => a.current?.proxies.length === 2 && b.current?.proxies.length === 2,
      45_000,
      'two proxies on each worker again',
    );
    expect(overlaps).toEqual([]);
    // Its own waits add up to 125 s (60 + 20 + 45): the 60 s default cut them short on a loaded runner.
  }, 180_000);
});
