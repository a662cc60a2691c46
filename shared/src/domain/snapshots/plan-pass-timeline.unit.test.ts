// A timeline of passes, run through planPass as the snapshot function runs it (each build's grant
// recorded before the next pass reads it): a worker whose session lapses (a crash, a partition) keeps its
// proxies until its last grant has run out plus the clock-skew allowance, and no proxy is ever in two
// workers' snapshots at once. With the worker's clock up to CLOCK_SKEW behind the controller's, the last
// moment it may allocate — usableUntil on its own clock — is still before the proxy reaches anyone else.
import { describe, expect, it } from 'vitest';
import { HEALTHY_CONDITIONS } from '../../testing/healthy-conditions.js';
import { aProxy, externalSpec } from '../../testing/proxy-fixtures.js';
import { acked } from '../../testing/worker-sessions.js';
import type { OwnershipRecord } from '../workers/ownership.js';
import { register } from '../workers/session.js';
import { DEFAULT_WORKER_SETTINGS as S } from '../workers/settings.js';
import { DEFAULT_ROUTING, workerContent } from './content.js';
import { planPass, type WorkerView } from './plan-pass.js';

const T0 = new Date('2026-01-01T00:00:00Z').getTime();
const proxies = Array.from({ length: 12 }, (_, i) =>
  aProxy({
    name: `p${i}`,
    spec: externalSpec({ gatewayPool: true }),
    status: { phase: 'Ready', conditions: HEALTHY_CONDITIONS },
  }),
);
// ACKed: only a session that has taken a snapshot is given proxies.
const session = (id: string, validUntil: number) => ({
  ...acked(
    register(
      null,
      { workerId: id, instanceId: 'i', zone: 'z', protocolVersion: 5, principal: 'p' },
      new Date(T0),
      `s-${id}`,
      30_000,
    ).session,
  ),
  validUntil: new Date(validUntil),
});

describe('a worker whose session lapses, pass by pass', () => {
  it('keeps its proxies until its grant + skew; nobody else gets one before it stopped allocating', () => {
    const lapsesAt = T0 + 45_000;
    let epoch = 0;
    let records = new Map<string, OwnershipRecord>();
    const grants = new Map<string, Date>();
    /** Per proxy, the end of w1's allocating (usableUntil + skew) and of its grant, from its last snapshot. */
    let w1Usable = 0;
    let w1Expires = 0;
    const w1Had = new Set<string>();
    let handedOver: number | null = null;
    for (let t = T0; t <= T0 + 600_000; t += 10_000) {
      const workers = new Map<string, WorkerView>([
        ['w1', { session: session('w1', lapsesAt), report: null, grantedUntil: grants.get('w1') ?? null }],
        ['w2', { session: session('w2', t + 30_000), report: null, grantedUntil: grants.get('w2') ?? null }],
      ]);
      const plan = planPass({
        now: new Date(t),
        poolSpecs: proxies,
        reclaimed: new Set(),
        leased: new Set(),
        epoch,
        records,
        workers,
        routing: DEFAULT_ROUTING,
        settings: S,
      });
      epoch = plan.ownership.epoch;
      records = plan.records;
      const seen = new Map<string, string>();
      for (const b of plan.builds) {
        grants.set(b.workerId, b.grant);
        const content = workerContent({
          workerId: b.workerId,
          epoch,
          grant: b.grant,
          routing: DEFAULT_ROUTING,
          owned: b.owned,
          now: new Date(t),
          allocationSafetyMarginMs: S.allocationSafetyMarginMs,
          protocolVersion: 5,
        });
        for (const p of content.proxies) {
          // Never in two snapshots of one pass.
          expect(seen.get(p.name) ?? b.workerId).toBe(b.workerId);
          seen.set(p.name, b.workerId);
          expect(Date.parse(p.usableUntil)).toBeLessThanOrEqual(
            Date.parse(p.expiresAt) - S.allocationSafetyMarginMs,
          );
          if (b.workerId === 'w1') {
            w1Had.add(p.name);
            w1Usable = Date.parse(p.usableUntil) + S.skewMs;
            w1Expires = Date.parse(p.expiresAt);
          } else if (w1Had.has(p.name)) handedOver ??= t;
        }
      }
      // A lapsed session gets no snapshot at all.
      if (t >= lapsesAt) expect(plan.builds.map((b) => b.workerId)).toEqual(['w2']);
    }
    expect(w1Had.size).toBeGreaterThan(0);
    expect(handedOver).not.toBeNull();
    // Handed over only once w1's last grant has run out plus the skew allowance — after the last moment a
    // w1 whose clock runs CLOCK_SKEW behind would still allocate — and within one pass of it.
    expect(handedOver!).toBeGreaterThanOrEqual(w1Expires + S.skewMs);
    expect(handedOver!).toBeGreaterThan(w1Usable);
    expect(handedOver!).toBeLessThan(w1Expires + S.skewMs + 10_000);
    // Its last grant was given while it was live: it ends no later than its session + one grant.
    expect(w1Expires).toBeLessThanOrEqual(lapsesAt + S.grantMs);
  });
});
