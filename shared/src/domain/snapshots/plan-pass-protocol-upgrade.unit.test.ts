// A gateway of the default worker id (gw-<instance>) moving to a newer protocol version re-registers: the
// pass its registration asks for must leave it its share (workers/session.ts keeps the same process's ACK
// bound). Found by an audit: every proxy it owned started draining, and its next snapshot listed none.
import { describe, expect, it } from 'vitest';
import { HEALTHY_CONDITIONS } from '../../testing/healthy-conditions.js';
import { aProxy, externalSpec } from '../../testing/proxy-fixtures.js';
import { acked } from '../../testing/worker-sessions.js';
import { register } from '../workers/session.js';
import { DEFAULT_WORKER_SETTINGS } from '../workers/settings.js';
import { DEFAULT_ROUTING } from './content.js';
import { planPass, type WorkerView } from './plan-pass.js';

const now = new Date('2026-01-01T00:00:00Z');
const later = (s: number) => new Date(now.getTime() + s * 1000);
const proxy = (name: string) =>
  aProxy({
    name,
    spec: externalSpec({ gatewayPool: true }),
    status: { phase: 'Ready', conditions: HEALTHY_CONDITIONS },
  });
const req = (workerId: string, protocolVersion: number) => ({
  workerId,
  instanceId: `i-${workerId}`,
  zone: 'z',
  protocolVersion,
  principal: `sa:${workerId}`,
});

describe('a protocol upgrade of a serving gateway', () => {
  it.each([['alone'], ['beside another serving gateway']])('keeps its share, %s', (beside) => {
    const at4 = acked(register(null, req('gw-a', 4), now, 's-a4', 30_000).session, 9, 5);
    const upgraded = register(at4, req('gw-a', 5), later(20), 's-a5', 30_000);
    expect(upgraded.kind).toBe('new');
    const view = (session: WorkerView['session']): WorkerView => ({
      session,
      report: null,
      grantedUntil: later(100),
    });
    const workers = new Map([['gw-a', view(upgraded.session)]]);
    if (beside !== 'alone') {
      workers.set('gw-b', view(acked(register(null, req('gw-b', 5), now, 's-b', 30_000).session, 9, 5)));
    }
    const names = ['p1', 'p2', 'p3', 'p4'];
    const first = planPass({
      now: later(20),
      poolSpecs: names.map(proxy),
      reclaimed: new Set(),
      leased: new Set(),
      epoch: 5,
      records: new Map(names.map((n) => [n, { proxy: n, owner: 'gw-a', since: 1, drainEpoch: null }])),
      workers,
      routing: DEFAULT_ROUTING,
      settings: DEFAULT_WORKER_SETTINGS,
    });
    // Alone it keeps all four; beside another it hands over only the balance's share, never all of them.
    const drains = first.ownership.changes.filter((c) => c.kind === 'drain_started');
    expect(drains.length).toBe(beside === 'alone' ? 0 : 2);
    const build = first.builds.find((b) => b.workerId === 'gw-a')!;
    expect(build.owned.length + Object.keys(build.draining).length).toBe(4);
    expect(build.owned.length).toBe(beside === 'alone' ? 4 : 2);
  });
});
