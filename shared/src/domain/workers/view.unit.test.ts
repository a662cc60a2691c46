import { describe, expect, it } from 'vitest';
import { HEALTHY_CONDITIONS } from '../../testing/healthy-conditions.js';
import { aProxy, externalSpec } from '../../testing/proxy-fixtures.js';
import { acked } from '../../testing/worker-sessions.js';
import { DEFAULT_ROUTING } from '../snapshots/content.js';
import { type PassInput, planPass, type WorkerView } from '../snapshots/plan-pass.js';
import { nextGrant } from './grants.js';
import type { OwnershipRecord } from './ownership.js';
import { register } from './session.js';
import { DEFAULT_WORKER_SETTINGS, loadWorkerSettings } from './settings.js';
import { viewCutoff } from './view.js';

const s = DEFAULT_WORKER_SETTINGS;
const now = new Date('2026-01-01T12:00:00Z');
const at = (ms: number) => new Date(now.getTime() + ms);
// ACKed: only a session that has taken a snapshot is given proxies.
const session = (id: string, validUntil: Date) => ({
  ...acked(
    register(
      null,
      { workerId: id, instanceId: 'i', zone: 'z', protocolVersion: 1, principal: 'p' },
      new Date(validUntil.getTime() - s.sessionTtlMs),
      `s-${id}`,
      s.sessionTtlMs,
    ).session,
  ),
  validUntil,
});
const pool = ['p1', 'p2', 'p3', 'p4'].map((name) =>
  aProxy({
    name,
    spec: externalSpec({ gatewayPool: true }),
    status: { phase: 'Ready', conditions: HEALTHY_CONDITIONS },
  }),
);
const rec = (proxy: string, owner: string, drainEpoch: number | null = null): OwnershipRecord => ({
  proxy,
  owner,
  since: 3,
  drainEpoch,
});

describe('view horizon settings', () => {
  it('defaults to an hour, well past a grant plus the skew allowance', () => {
    expect(s.viewHorizonMs).toBe(3_600_000);
    expect(s.viewHorizonMs).toBeGreaterThanOrEqual(s.grantMs + s.skewMs);
  });

  it.each([
    ['184', false],
    ['185', true],
    ['86400', true],
  ])('WORKER_VIEW_HORIZON_SECONDS=%s with a 180 s grant and 5 s skew → accepted %s', (v, ok) => {
    const load = () => loadWorkerSettings({ WORKER_VIEW_HORIZON_SECONDS: v });
    if (ok) expect(load().viewHorizonMs).toBe(Number(v) * 1000);
    else expect(load).toThrow(/WORKER_VIEW_HORIZON_SECONDS/);
  });

  // Every grant the settings accepted before the horizon existed (OWNERSHIP_GRANT_SECONDS ≤ 86,400) must
  // still find a horizon that covers it plus the skew allowance (renewed 20 s into it, as a grant that
  // long must be to keep its workers under the max stale age: settings.ts).
  it.each([
    ['86396', '86401', true],
    ['86400', '86405', true],
    ['86400', '86700', true],
    ['86400', '172800', true],
    ['86400', '86404', false],
    ['180', '172801', false],
  ])(
    'OWNERSHIP_GRANT_SECONDS=%s with WORKER_VIEW_HORIZON_SECONDS=%s (5 s skew) → accepted %s',
    (g, v, ok) => {
      const load = () =>
        loadWorkerSettings({
          OWNERSHIP_GRANT_SECONDS: g,
          OWNERSHIP_RENEW_BEFORE_SECONDS: String(Number(g) - 20),
          WORKER_VIEW_HORIZON_SECONDS: v,
        });
      if (ok) expect(load()).toMatchObject({ grantMs: Number(g) * 1000, viewHorizonMs: Number(v) * 1000 });
      else expect(load).toThrow(/WORKER_VIEW_HORIZON_SECONDS/);
    },
  );

  it('the cutoff is the horizon before now', () => {
    expect(viewCutoff(now, s)).toEqual(at(-3_600_000));
  });
});

describe('a worker out of view changes no decision', () => {
  // The latest grant a session lapsed at `validUntil` can hold: the last pass that saw it live renewed it
  // an instant before validUntil (grants.ts renews only live sessions).
  const lastGrant = (validUntil: Date) => nextGrant(null, true, new Date(validUntil.getTime() - 1), s)!;

  it.each([
    ['lapsed exactly at the cutoff', 0],
    ['lapsed a minute before the cutoff', -60_000],
    ['lapsed a day before the cutoff', -86_400_000],
  ])('%s: the plan with it in view equals the plan without it', (_n, offset) => {
    const gone = at(-s.viewHorizonMs + offset);
    const live: WorkerView = {
      session: session('w-live', at(20_000)),
      report: null,
      grantedUntil: at(60_000),
    };
    const dead: WorkerView = {
      session: session('w-dead', gone),
      report: null,
      grantedUntil: lastGrant(gone),
    };
    const input = (workers: Map<string, WorkerView>): PassInput => ({
      now,
      poolSpecs: pool,
      routing: DEFAULT_ROUTING,
      reclaimed: new Set(),
      leased: new Set(),
      epoch: 7,
      // The dead worker still owns two proxies, one of them mid-drain: both must move to the live one.
      records: new Map([
        ['p1', rec('p1', 'w-dead')],
        ['p2', rec('p2', 'w-dead', 6)],
        ['p3', rec('p3', 'w-live')],
      ]),
      workers,
      settings: s,
    });
    const withDead = planPass(
      input(
        new Map([
          ['w-live', live],
          ['w-dead', dead],
        ]),
      ),
    );
    const without = planPass(input(new Map([['w-live', live]])));
    expect(without).toEqual(withDead);
    const owners = [...without.records.values()].map((r) => `${r.proxy}:${r.owner}`).sort();
    expect(owners).toEqual(['p1:w-live', 'p2:w-live', 'p3:w-live', 'p4:w-live']);
  });

  it('a worker inside the horizon whose grant still holds does matter: its records wait', () => {
    const gone = at(-60_000);
    const dead: WorkerView = {
      session: session('w-dead', gone),
      report: null,
      grantedUntil: lastGrant(gone),
    };
    const live: WorkerView = {
      session: session('w-live', at(20_000)),
      report: null,
      grantedUntil: at(60_000),
    };
    const records = new Map([['p1', rec('p1', 'w-dead')]]);
    const base = {
      now,
      poolSpecs: pool.slice(0, 1),
      reclaimed: new Set<string>(),
      leased: new Set<string>(),
    };
    const x = { ...base, epoch: 7, records, routing: DEFAULT_ROUTING, settings: s };
    const seen = planPass({
      ...x,
      workers: new Map([
        ['w-live', live],
        ['w-dead', dead],
      ]),
    });
    expect(seen.ownership.changes.map((c) => c.kind)).toEqual(['drain_started']);
    // …which is why the grant query reads such a header even when its worker document is not read.
    const unseen = planPass({ ...x, workers: new Map([['w-live', live]]) });
    expect(unseen.ownership.changes.map((c) => c.kind)).toEqual(['released']);
  });
});
