import { describe, expect, it, vi } from 'vitest';
import { prepare } from '../../../shared/src/domain/snapshots/canonical-fast.js';
import {
  contentDigest,
  DEFAULT_ROUTING,
  workerContent,
} from '../../../shared/src/domain/snapshots/content.js';
import type { WorkerBuild } from '../../../shared/src/domain/snapshots/plan-pass.js';
import { DEFAULT_WORKER_SETTINGS } from '../../../shared/src/domain/workers/settings.js';
import { sha256Hex } from '../../../shared/src/messages/gateway-snapshot.js';
import { ManualClock } from '../../../shared/src/ports/clock.js';
import { WorkerStoreError } from '../../../shared/src/ports/workers.js';
import type { SnapshotHeader } from '../../../shared/src/ports/workers-snapshots.js';
import type { SnapshotPassDeps } from './deps.js';
import { actWorkerStep, decideWorkerStep, type StepContext } from './worker-steps.js';

const now = new Date('2026-01-01T00:00:00Z');
const later = (s: number) => new Date(now.getTime() + s * 1000);
const deps = { settings: DEFAULT_WORKER_SETTINGS, sha256: sha256Hex } as SnapshotPassDeps;
const build: WorkerBuild = {
  workerId: 'w1',
  sessionId: 's1',
  protocolVersion: 2,
  grant: later(180),
  owned: [],
  draining: {},
};
const digest = contentDigest(
  prepare(
    workerContent({
      workerId: 'w1',
      epoch: 3,
      grant: later(180),
      routing: DEFAULT_ROUTING,
      owned: [],
      now,
      allocationSafetyMarginMs: DEFAULT_WORKER_SETTINGS.allocationSafetyMarginMs,
      protocolVersion: 2,
    }),
  ),
  sha256Hex,
);
const header = (over: Partial<SnapshotHeader> = {}): SnapshotHeader => ({
  workerId: 'w1',
  version: 7,
  ownershipEpoch: 3,
  checksum: 'c',
  contentDigest: digest,
  sessionId: 's1',
  generatedAt: now,
  validUntil: later(180),
  grantedUntil: later(180),
  draining: {},
  recent: [],
  sentAt: now,
  proxies: 0,
  ...over,
});
const ctx = (over: Partial<StepContext> = {}): StepContext => ({
  epoch: 3,
  routing: DEFAULT_ROUTING,
  failOpenRoutes: [],
  now,
  header: header(),
  ackedVersion: 7,
  boundFrom: null,
  ...over,
});

describe('decideWorkerStep', () => {
  it.each<[string, Partial<StepContext>, Partial<WorkerBuild>, string, number | null]>([
    ['nothing changed and the worker ACKed it: nothing to do (no write)', {}, {}, 'none', null],
    ['first snapshot', { header: null, ackedVersion: null }, {}, 'publish', 1],
    ['a new epoch', { epoch: 4 }, {}, 'publish', 8],
    ['a renewed grant', {}, { grant: later(200) }, 'publish', 8],
    ['a new session of the worker', {}, { sessionId: 's2' }, 'publish', 8],
    [
      'the ACK lags and the last send is old: re-send',
      { ackedVersion: 6, now: later(31) },
      {},
      'resend',
      null,
    ],
    ['the ACK lags but it was just sent: wait', { ackedVersion: 6, now: later(5) }, {}, 'none', null],
    ['only the drain list changed: patch the header', {}, { draining: { p9: 3 } }, 'patch_draining', null],
  ])('%s', (_n, c, b, kind, version) => {
    const s = decideWorkerStep(deps, { ...build, ...b }, ctx(c));
    expect(s.kind).toBe(kind);
    if (s.kind === 'publish') expect(s.full.version).toBe(version);
  });
});

describe('actWorkerStep', () => {
  const acting = (
    save: () => Promise<void>,
    c = ctx({ epoch: 4 }),
    loadFull: () => Promise<unknown> = async () => null,
  ) => {
    const publish = vi.fn(async (_m: { kind: string; version: number }) => 'id');
    const patchHeader = vi.fn(async () => {});
    const warn = vi.fn();
    const saved = vi.fn(save);
    const d = {
      ...deps,
      clock: new ManualClock(now),
      log: { info: vi.fn(), warn, error: vi.fn() },
      publisher: { publish },
      snapshots: { save: saved, loadFull: vi.fn(loadFull), patchHeader },
    } as unknown as SnapshotPassDeps;
    const step = decideWorkerStep(d, build, c);
    return { run: () => actWorkerStep(d, step, c), publish, patchHeader, warn, save: saved };
  };

  it('publishes what it saved', async () => {
    const a = acting(async () => {});
    expect(await a.run()).toMatchObject({ kind: 'publish', version: 8 });
    expect(a.publish).toHaveBeenCalledOnce();
  });

  it('records the ACK the worker owes with the header it saves: carried while unpaid, restarted once paid', async () => {
    const owedIn = async (c: StepContext) => {
      const a = acting(async () => {}, c);
      await a.run();
      return (a.save.mock.calls[0] as unknown as [SnapshotHeader])[0].ackOwed;
    };
    const owed = { version: 6, since: later(-40) };
    // The worker ACKed 7, the header's version: version 8 is what it owes now.
    expect(await owedIn(ctx({ epoch: 4, header: header({ ackOwed: owed }) }))).toEqual({
      version: 8,
      since: now,
    });
    // Still at 5: it owes 6 since 40 s ago, whatever went out since.
    expect(await owedIn(ctx({ epoch: 4, ackedVersion: 5, header: header({ ackOwed: owed }) }))).toEqual(owed);
    // The header is another session's: what it owed is not this session's debt.
    expect(
      await owedIn(ctx({ epoch: 4, ackedVersion: 5, header: header({ ackOwed: owed, sessionId: 's0' }) })),
    ).toEqual({ version: 8, since: now });
    // Unless this session took its process's bound from that one (a protocol change): its debt carries on
    // into the first header built for this session, and the process stays withheld.
    expect(
      await owedIn(
        ctx({
          epoch: 4,
          ackedVersion: 5,
          boundFrom: ['s0'],
          header: header({ ackOwed: owed, sessionId: 's0' }),
        }),
      ),
    ).toEqual(owed);
  });

  it('a save refused as a lost race (another pass stored the version first): no publish, logged', async () => {
    const a = acting(async () => {
      throw new WorkerStoreError('conflict', 'already at version 8');
    });
    expect(await a.run()).toEqual({ workerId: 'w1', kind: 'lost_race', version: 8 });
    expect(a.publish).not.toHaveBeenCalled();
    expect(a.patchHeader).not.toHaveBeenCalled();
    expect(a.warn).toHaveBeenCalledWith(
      expect.any(String),
      expect.objectContaining({ event: 'gateway.snapshot_race_lost', workerId: 'w1', version: 8 }),
    );
  });

  it('any other store failure is still a failure (the pass counts it and retries)', async () => {
    const a = acting(async () => {
      throw new WorkerStoreError('unavailable', 'down');
    });
    await expect(a.run()).rejects.toMatchObject({ kind: 'unavailable' });
    expect(a.publish).not.toHaveBeenCalled();
  });

  // A part that no longer fits the schema (a newer release's proxy fields read after a rollback, or a hand
  // edit) fails loadFull the same way every pass: failing the step on it left the worker without a new
  // version, hence without a renewed grant, for good.
  const unreadable = async () => {
    throw new WorkerStoreError('invalid', 'read the snapshot of w1: a stored document does not fit');
  };
  it.each<[string, StepContext]>([
    ['the delta base (an epoch bump)', ctx({ epoch: 4 })],
    ['the snapshot to re-send (the ACK lags)', ctx({ ackedVersion: 6, now: later(31) })],
  ])(
    'a stored snapshot that no longer parses as %s: the next version goes in full, its save rewrites the parts',
    async (_n, c) => {
      const a = acting(async () => {}, c, unreadable);
      expect(await a.run()).toMatchObject({ kind: 'publish', message: 'full', version: 8 });
      expect(a.save).toHaveBeenCalledOnce();
      expect(a.publish).toHaveBeenCalledOnce();
      expect(a.publish.mock.calls[0]![0]).toMatchObject({ kind: 'full', version: 8 });
      expect(a.warn).toHaveBeenCalledWith(
        expect.any(String),
        expect.objectContaining({ event: 'gateway.snapshot_unreadable', workerId: 'w1', version: 7 }),
      );
    },
  );
});
