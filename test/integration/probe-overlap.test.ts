// Overlapping probe invocations on the Firestore emulator (docs/health.md § Overlapping ticks): an active
// pass that runs past the next tick and the next invocation's passive pass decide on the same
// `health/{proxy}` document. Each interleaving that used to lose an update is reproduced deterministically
// — one pass is held between its read and its write by a test double, the other runs to completion, then
// the first is released — and both updates must land: the losing write is refused by its precondition and
// decided again on the fresh state with the same probe result (or gateway signal).
//   (a) the active pass read before the passive commit and writes after it: the passive signal must stay;
//   (b) the passive pass read before the active write and commits after it: the probe result must stay.

import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runPassivePass } from '../../functions/probe/src/passive-pass.js';
import { type ProbeDeps, runProbePass } from '../../functions/probe/src/probe-pass.js';
import type { Prober } from '../../functions/probe/src/tiers.js';
import { FirestoreWorkerStore } from '../../shared/src/adapters/firestore/worker-store.js';
import type { ProbeResult } from '../../shared/src/adapters/probe/proxy-probe.js';
import type { ProxyResource } from '../../shared/src/domain/proxy.js';
import { type ReportedOutcome, tallyOutcomes } from '../../shared/src/domain/workers/outcomes.js';
import type { PassiveFeedStore } from '../../shared/src/ports/passive-feed.js';
import type { WorkerRecord } from '../../shared/src/ports/workers.js';
import { testProjectId } from '../support/emulators.js';
import { type ProbeFleet, startProbeFleet } from '../support/probe-fleet.js';
import { record as workerRecord } from '../support/worker-records.js';

/** Seven failed dials of `proxy` by one gateway: a failed passive signal (min samples 5). */
const failedDials = (proxy: string): ReportedOutcome[] =>
  Array.from({ length: 7 }, () => ({
    proxy,
    stage: 'DIAL',
    ok: false,
    latencyMs: 0,
    target: 'example.com:443',
  }));

const refused: ProbeResult = {
  ok: false,
  latencyMs: 5,
  status: null,
  body: null,
  failure: { stage: 'DIAL', code: 'connect_refused' },
};

function gate() {
  let open!: () => void;
  const opened = new Promise<void>((r) => {
    open = r;
  });
  return { open, opened };
}

describe('overlapping probe passes: no update overwrites another', () => {
  let fleet: ProbeFleet;
  let workers: FirestoreWorkerStore;
  let record: WorkerRecord;
  let pa: ProxyResource;
  let pb: ProxyResource;

  /** One outcome batch recorded as the API records it (probe-passive.test.ts), the clock brought up to it. */
  async function report(outcomes: ReportedOutcome[]): Promise<void> {
    for (let i = 0; i < 100 && Date.now() <= fleet.clock.now().getTime(); i++) await sleep(50);
    const current = await workers.get('gw-1');
    const sequence = record.session.outcomeSequence + 1;
    record = { ...record, session: { ...record.session, outcomeSequence: sequence } };
    await workers.putOutcomeSequence('gw-1', sequence, current!.token, {
      workerId: 'gw-1',
      sessionId: record.session.sessionId,
      sequence,
      receivedAt: new Date('2020-01-01T00:00:00Z'),
      tallies: tallyOutcomes(outcomes, () => true).tallies,
    });
    const doc = await fleet.db.doc(`workerOutcomes/gw-1__${record.session.sessionId}__${sequence}`).get();
    const stamp = doc.get('receivedAt').toMillis() as number;
    fleet.clock.advance(Math.max(0, Math.ceil(stamp) - fleet.clock.now().getTime()) + 1000);
  }

  /** The real prober, except that `proxy`'s probes are refused — after `hold`, when given. */
  function refusing(proxy: ProxyResource, hold?: { reached: () => void; until: Promise<void> }): Prober {
    const real = fleet.deps.prober;
    const intercept = async () => {
      hold?.reached();
      await hold?.until;
      return refused;
    };
    return {
      probe: (target, opts) => (target.host === proxy.status.ip ? intercept() : real.probe(target, opts)),
      handshake: (target, authority, timeoutMs) =>
        target.host === proxy.status.ip ? intercept() : real.handshake(target, authority, timeoutMs),
      direct: real.direct,
    };
  }

  /** One active pass over an interval ending now: every proxy is due once. */
  async function activePass(deps: ProbeDeps) {
    const to = fleet.clock.now();
    return runProbePass(deps, await fleet.proxies.list(), new Date(to.getTime() - 1000), to);
  }

  const stored = async (p: ProxyResource) => (await fleet.health.get(p.name))!;

  beforeAll(async () => {
    fleet = await startProbeFleet(testProjectId(), { passive: { expiryMs: 60_000 } });
    workers = new FirestoreWorkerStore(fleet.db);
    const now = fleet.clock.now();
    record = workerRecord('gw-1', new Date(now.getTime() + 3600_000));
    await workers.put(record, null);
    pa = (await fleet.add('p-overlap-a')).proxy;
    pb = (await fleet.add('p-overlap-b')).proxy;
    // Active verdicts first (successThreshold 2): the passive pass only refines stored state.
    await fleet.tick();
    await fleet.tick();
  }, 60_000);
  afterAll(async () => {
    await fleet?.stop();
  });

  it('(a) an active pass that read before a passive commit and writes after it keeps the passive signal', async () => {
    expect(await stored(pa)).toMatchObject({ verdict: 'AVAILABLE', passive: null });
    // The older invocation's active pass: it reads health/p-overlap-a, then its probe hangs …
    const reached = gate();
    const release = gate();
    const active = activePass({
      ...fleet.deps,
      prober: refusing(pa, { reached: reached.open, until: release.opened }),
    });
    await reached.opened;
    // … while the next invocation's passive pass counts the gateways' failed dials and commits.
    await report(failedDials(pa.name));
    const passive = await runPassivePass(fleet.deps, await fleet.proxies.list(), fleet.clock.now());
    expect(passive).toMatchObject({ outcomeBatches: 1, written: 1 });
    expect((await stored(pa)).passive?.track.consecutiveFail).toBe(1);
    // The probe returns (refused) and the active pass writes the proxy it read before that commit.
    release.open();
    await active;
    const after = await stored(pa);
    expect(after.tracks.BASIC).toMatchObject({ consecutiveOk: 0, consecutiveFail: 1 });
    expect(after.passive?.track.consecutiveFail).toBe(1);
  });

  it('(b) a passive pass that read before an active write and commits after it keeps the probe result', async () => {
    expect(await stored(pb)).toMatchObject({ verdict: 'AVAILABLE', passive: null });
    const before = (await stored(pb)).tracks.BASIC!;
    expect(before.consecutiveFail).toBe(0);
    // The next invocation's passive pass reads the batch and health/p-overlap-b, then stalls before its
    // commit …
    await report(failedDials(pb.name));
    const reached = gate();
    const release = gate();
    const real = fleet.deps.passive.feed;
    let commits = 0;
    const stalled: PassiveFeedStore = {
      cursor: () => real.cursor(),
      commit: async (...args) => {
        if (commits++ === 0) {
          reached.open();
          await release.opened;
        }
        return real.commit(...args);
      },
    };
    const passive = runPassivePass(
      { ...fleet.deps, passive: { ...fleet.deps.passive, feed: stalled } },
      await fleet.proxies.list(),
      fleet.clock.now(),
    );
    await reached.opened;
    // … while the older invocation's active pass probes the proxy (refused) and writes the result.
    await activePass({ ...fleet.deps, prober: refusing(pb) });
    expect((await stored(pb)).tracks.BASIC).toMatchObject({ consecutiveOk: 0, consecutiveFail: 1 });
    // The passive pass commits what it decided on the state it read before that write.
    release.open();
    expect(await passive).toMatchObject({ outcomeBatches: 1, written: 1 });
    const after = await stored(pb);
    expect(after.passive?.track.consecutiveFail).toBe(1);
    expect(after.tracks.BASIC).toMatchObject({ consecutiveOk: 0, consecutiveFail: 1 });
    // Counted once: the window is consumed, and the cursor moved past it exactly once.
    fleet.clock.advance(1000);
    expect(await runPassivePass(fleet.deps, await fleet.proxies.list(), fleet.clock.now())).toMatchObject({
      outcomeBatches: 0,
    });
    expect((await stored(pb)).passive?.track.consecutiveFail).toBe(1);
  });
});
