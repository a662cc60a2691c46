// Ownership benchmark: what giving every worker its share of every route (shared/src/domain/workers/
// route-balance.ts) adds to the planner's rendezvous hashing, side by side in one run (the same pool with
// no route to balance is plain rendezvous), at three fleet shapes:
//   - 2,000 proxies, 10 workers, 20 routes of 100;
//   - 20,000 proxies, 100 workers, one route over all (the default routing);
//   - 20,000 proxies, 100 workers, 1,000 routes of 20 — fewer proxies than workers — plus the default;
//   - the same with overlapping routes: 1,000 sites, 7 zones, 50 pools and the default (1,058 routes).
// Targets are on the CPU of one planning at 20,000 proxies (a snapshot pass runs every minute); the ratios
// to rendezvous alone are reported beside them (on the small shape a few milliseconds either way).
//   npm run bench -- ownership [--reps 7] [--warmup 1]
import { parseArgs } from 'node:util';
import {
  type BalanceProxy,
  type BalanceRoute,
  balancedOwners,
} from '../shared/src/domain/workers/route-balance.js';
import { writeResult } from './support/result.js';

interface Shape {
  key: string;
  proxies: number;
  workers: number;
  routes: number;
  /** Zone and pool routes beside the site routes and the default. */
  overlapping?: boolean;
  /** Bound on the balanced planning's CPU ms (none: reported only). */
  maxCpuMs?: number;
}

const SHAPES: Shape[] = [
  { key: 'p2kW10R20', proxies: 2_000, workers: 10, routes: 20 },
  { key: 'p20kW100R1', proxies: 20_000, workers: 100, routes: 1, maxCpuMs: 1_000 },
  { key: 'p20kW100R1000', proxies: 20_000, workers: 100, routes: 1_000, maxCpuMs: 1_000 },
  { key: 'p20kW100R1058', proxies: 20_000, workers: 100, routes: 1_000, overlapping: true, maxCpuMs: 2_000 },
];

function fleet(s: Shape): { proxies: BalanceProxy[]; routes: BalanceRoute[] } {
  const workers = Array.from({ length: s.workers }, (_, i) => `gw-${i}`);
  const proxies = Array.from({ length: s.proxies }, (_, i) => ({
    name: `proxy-${String(i).padStart(5, '0')}`,
    attributes: { site: `s${i % s.routes}`, zone: `z${i % 7}`, pool: `p${i % 50}` },
    serving: i % 50 !== 0, // one in fifty unhealthy: owned, counted in no route
    eligible: workers,
  }));
  const routes = [
    ...(s.routes > 1 ? Array.from({ length: s.routes }, (_, i) => ({ selector: { site: `s${i}` } })) : []),
    ...(s.overlapping
      ? [
          ...Array.from({ length: 7 }, (_, i) => ({ selector: { zone: `z${i}` } })),
          ...Array.from({ length: 50 }, (_, i) => ({ selector: { pool: `p${i}` } })),
        ]
      : []),
    { selector: {} },
  ];
  return { proxies, routes };
}

/** CPU time of this process (user + system), in ms: what the work costs, whatever else shares the cores. */
function cpuMs(fn: () => unknown): number {
  const t = process.cpuUsage();
  fn();
  const d = process.cpuUsage(t);
  return (d.user + d.system) / 1000;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;

export default async function ownershipBench(args: string[]): Promise<void> {
  const { values: o } = parseArgs({
    args,
    options: { reps: { type: 'string', default: '7' }, warmup: { type: 'string', default: '1' } },
  });
  const reps = Number(o.reps);
  const metrics: Record<string, number> = {};
  const targets: Record<string, { op: '<='; value: number }> = {};
  for (const shape of SHAPES) {
    const { proxies, routes } = fleet(shape);
    const plain: number[] = [];
    const balanced: number[] = [];
    for (let i = 0; i < Number(o.warmup) + reps; i++) {
      // Interleaved, the order alternating, so drift on a shared machine lands on both.
      const runs = [() => plain.push(cpuMs(() => balancedOwners(proxies, [])))];
      runs.push(() => balanced.push(cpuMs(() => balancedOwners(proxies, routes))));
      if (i % 2 === 1) runs.reverse();
      for (const run of runs) run();
      if (i < Number(o.warmup)) {
        plain.length = 0;
        balanced.length = 0;
      }
    }
    metrics[`${shape.key}PlainCpuMs`] = median(plain);
    metrics[`${shape.key}BalancedCpuMs`] = median(balanced);
    metrics[`${shape.key}BalancedVsPlain`] = median(balanced) / median(plain);
    if (shape.maxCpuMs) targets[`${shape.key}BalancedCpuMs`] = { op: '<=', value: shape.maxCpuMs };
  }
  writeResult({
    name: 'ownership',
    params: { reps, warmup: Number(o.warmup), shapes: SHAPES },
    metrics,
    targets,
    notes: [
      'Plain = the same pool with no route to balance (rendezvous hashing only, what the planner did before).',
      'CPU time of the bench process per planning, median over the repetitions.',
    ],
  });
}
