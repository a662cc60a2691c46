// Gateway outcomes as PASSIVE health signals (issue 7, contract §5 → §6), on the Firestore emulator with
// real proxies: outcome batches recorded through the API's own store adapter (the same batched write that
// accepts a worker's outcome sequence) are consumed by real probe ticks. A proxy the gateways fail to dial
// turns SUSPECT, then UNHEALTHY with the PassiveFailures reason reconcile folds into status, even though
// its active probe passes; no batch is counted twice (duplicate and concurrent ticks); without further
// outcomes the evidence expires and the proxy is healthy again; a proxy with good outcomes stays healthy.

import { setTimeout as sleep } from 'node:timers/promises';
import { Timestamp } from '@google-cloud/firestore';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runPassivePass } from '../../functions/probe/src/passive-pass.js';
import { storeHealthSource } from '../../functions/reconcile/src/health-source.js';
import { FirestorePassiveFeedStore } from '../../shared/src/adapters/firestore/passive-feed-store.js';
import { FirestoreWorkerStore } from '../../shared/src/adapters/firestore/worker-store.js';
import type { ProxyResource } from '../../shared/src/domain/proxy.js';
import { type ReportedOutcome, tallyOutcomes } from '../../shared/src/domain/workers/outcomes.js';
import type { WorkerRecord } from '../../shared/src/ports/workers.js';
import { testProjectId } from '../support/emulators.js';
import { type ProbeFleet, startProbeFleet } from '../support/probe-fleet.js';
import { record as workerRecord } from '../support/worker-records.js';

const outcome = (proxy: string, stage: string, ok: boolean): ReportedOutcome => ({
  proxy,
  stage,
  ok,
  latencyMs: ok ? 40 : 0,
  target: 'example.com:443',
});
/** What a gateway sends in a bad minute for `bad` and a good one for `good`. */
const badMinute = (bad: string, good: string): ReportedOutcome[] => [
  ...Array.from({ length: 4 }, () => outcome(bad, 'DIAL', false)),
  ...Array.from({ length: 3 }, () => outcome(bad, 'PROXY_HANDSHAKE', false)),
  ...Array.from({ length: 8 }, () => outcome(good, 'TUNNEL', true)),
];

describe('gateway outcomes feed the health reducer as passive signals', () => {
  let fleet: ProbeFleet;
  let workers: FirestoreWorkerStore;
  let record: WorkerRecord;
  let bad: ProxyResource;
  let good: ProxyResource;

  /**
   * Records one outcome batch exactly as the API does when it accepts the worker's next sequence. The batch
   * is stamped with Firestore's commit time (the real clock), so the fleet's manual clock is first left
   * behind by the real one (a batch stamped before the consumed point would never be read: the settle
   * delay covers that skew in production, 0 here) and then brought up to the stamp.
   */
  async function report(outcomes: ReportedOutcome[]): Promise<Timestamp> {
    for (let i = 0; i < 100 && Date.now() <= fleet.clock.now().getTime(); i++) await sleep(50);
    const current = await workers.get('gw-1');
    const sequence = record.session.outcomeSequence + 1;
    record = { ...record, session: { ...record.session, outcomeSequence: sequence } };
    await workers.putOutcomeSequence('gw-1', sequence, current!.token, {
      workerId: 'gw-1',
      sessionId: record.session.sessionId,
      sequence,
      receivedAt: new Date('2020-01-01T00:00:00Z'), // the API's clock: only the TTL may use it
      tallies: tallyOutcomes(outcomes, () => true).tallies,
    });
    const doc = await fleet.db.doc(`workerOutcomes/gw-1__${record.session.sessionId}__${sequence}`).get();
    const stamp = doc.get('receivedAt') as Timestamp;
    fleet.clock.advance(Math.max(0, Math.ceil(stamp.toMillis()) - fleet.clock.now().getTime()));
    return stamp;
  }
  const verdict = async (p: ProxyResource) => (await fleet.health.get(p.name))?.verdict;
  const condition = async (p: ProxyResource) =>
    (await storeHealthSource(fleet.health).verdictFor(p))?.verdict;

  beforeAll(async () => {
    fleet = await startProbeFleet(testProjectId(), { passive: { expiryMs: 3000 } });
    workers = new FirestoreWorkerStore(fleet.db);
    const now = fleet.clock.now();
    record = workerRecord('gw-1', new Date(now.getTime() + 3600_000));
    await workers.put(record, null);
    bad = (await fleet.add('p-gw-bad')).proxy;
    good = (await fleet.add('p-gw-good')).proxy;
    // Active verdicts first (successThreshold 2): gateways only ever see proxies that had one.
    await fleet.tick();
    await fleet.tick();
  }, 60_000);
  afterAll(async () => {
    await fleet?.stop();
  });

  it('a healthy fleet with no outcomes: the passive pass reads nothing and writes no cursor', async () => {
    expect(await verdict(bad)).toBe('AVAILABLE');
    expect(await verdict(good)).toBe('AVAILABLE');
    expect((await fleet.db.doc('cursors/probe-passive').get()).exists).toBe(false);
  });

  it('failed dials turn the proxy SUSPECT, then UNHEALTHY with the passive reason; each batch counted once', async () => {
    fleet.published.length = 0;
    const before = Date.now();
    const stamp = await report(badMinute(bad.name, good.name));
    // The commit time, not the API's clock.
    expect(stamp.toMillis()).toBeGreaterThanOrEqual(before - 1000);
    expect(stamp.toMillis()).toBeLessThanOrEqual(Date.now() + 1000);
    const first = await fleet.tick();
    expect(first).toMatchObject({ outcomeBatches: 1, passiveSignals: 2 });
    expect(await verdict(bad)).toBe('SUSPECT');
    expect(await condition(bad)).toMatchObject({ healthy: true, reason: 'PassiveSuspect' });
    const cursor = await fleet.db.doc('cursors/probe-passive').get();
    expect(cursor.get('through')).toBeInstanceOf(Timestamp);

    // The same tick delivered again: the claim drops it …
    expect(await fleet.tick(0)).toBeNull();
    // … and a tick past the claim finds the window consumed: nothing counted, nothing written.
    const again = await fleet.tick(600);
    expect(again).toMatchObject({ outcomeBatches: 0, passiveSignals: 0 });
    expect((await fleet.health.get(bad.name))?.passive?.track.consecutiveFail).toBe(1);
    expect((await fleet.db.doc('cursors/probe-passive').get()).updateTime).toEqual(cursor.updateTime);

    // Two concurrent passes over one new batch (two function instances): the cursor's precondition lets
    // exactly one count it.
    await report(badMinute(bad.name, good.name));
    fleet.clock.advance(1000);
    const all = await fleet.proxies.list();
    const both = await Promise.all([
      runPassivePass(fleet.deps, all, fleet.clock.now()),
      runPassivePass(fleet.deps, all, fleet.clock.now()),
    ]);
    expect(both.map((c) => c.outcomeBatches).sort()).toEqual([0, 1]);
    expect((await fleet.health.get(bad.name))?.passive?.track.consecutiveFail).toBe(2);
    // Still SUSPECT (healthy): no verdict transition yet. (Publishes are not counted here: the active
    // tick above may publish a latency report for this proxy on a loaded machine.)
    expect(await verdict(bad)).toBe('SUSPECT');
    expect(await condition(bad)).toMatchObject({ healthy: true, reason: 'PassiveSuspect' });

    // The third failed signal: UNHEALTHY although the active probe passes, and reconcile is told.
    await report(badMinute(bad.name, good.name));
    await fleet.tick();
    const state = await fleet.health.get(bad.name);
    expect(state?.verdict).toBe('UNHEALTHY');
    expect(state?.tracks.BASIC?.verdict).toBe('AVAILABLE');
    expect(await condition(bad)).toMatchObject({ healthy: false, reason: 'PassiveFailures' });
    expect(fleet.published).toContainEqual({ proxy: bad.name, reason: 'health-transition' });
  });

  it('a proxy with successful outcomes stays healthy and stores no passive evidence', async () => {
    const state = await fleet.health.get(good.name);
    expect(state?.verdict).toBe('AVAILABLE');
    expect(state?.passive).toBeNull();
    expect(await condition(good)).toMatchObject({ healthy: true, reason: 'ProbeSucceeded' });
  });

  it('with no further outcomes the passive evidence expires and the active tiers alone decide again', async () => {
    fleet.published.length = 0;
    const verdicts = [];
    for (let i = 0; i < 4 && (await verdict(bad)) !== 'AVAILABLE'; i++) {
      await fleet.tick();
      verdicts.push(await verdict(bad));
    }
    // expiryMs 3000, one tick a second: unhealthy for the window, then healthy again.
    expect(verdicts.at(-1)).toBe('AVAILABLE');
    expect(verdicts.length).toBeGreaterThanOrEqual(2);
    expect((await fleet.health.get(bad.name))?.passive).toBeNull();
    expect(await condition(bad)).toMatchObject({ healthy: true, reason: 'ProbeSucceeded' });
    expect(fleet.published).toContainEqual({ proxy: bad.name, reason: 'health-transition' });
  });

  it('a hand-edited cursor document without a readable `through` is rewritten by the next commit, not a conflict forever', async () => {
    await fleet.db
      .doc('cursors/probe-passive')
      .set({ through: 'yesterday', tracked: 'p-gw-bad', note: 'hand-edited' });
    const warned: Array<Record<string, unknown>> = [];
    const feed = new FirestorePassiveFeedStore(fleet.db, (_m, f) => void warned.push(f));
    const deps = { ...fleet.deps, passive: { ...fleet.deps.passive, feed } };
    await report(badMinute(bad.name, good.name));
    fleet.clock.advance(1000);
    const all = await fleet.proxies.list();
    const counted = await runPassivePass(deps, all, fleet.clock.now());
    expect(counted.outcomeBatches).toBe(1);
    const cursor = await fleet.db.doc('cursors/probe-passive').get();
    expect(cursor.get('through')).toBeInstanceOf(Timestamp);
    expect(cursor.get('tracked')).toEqual([bad.name]);
    expect((await fleet.health.get(bad.name))?.passive?.track.consecutiveFail).toBe(1);
    // Readable again: the next pass reads it normally; the warning was logged once.
    fleet.clock.advance(1000);
    expect((await runPassivePass(deps, all, fleet.clock.now())).outcomeBatches).toBe(0);
    expect(warned).toEqual([{ cursor: 'cursors/probe-passive' }]);
  });
});
