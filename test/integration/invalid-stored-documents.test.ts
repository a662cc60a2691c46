// A stored document that no longer fits its schema (edited by hand in the console, written by an older
// version) is left out by the reader that meets it — it must not fail the pass — but never silently: one
// WARNING names the document and the failing field paths, never their values. On the Firestore emulator,
// the documents edited with the real client as an operator would.
import { Firestore } from '@google-cloud/firestore';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { observe } from '../../functions/snapshot/src/observe.js';
import { FirestoreOwnershipGate } from '../../shared/src/adapters/firestore/ownership-gate.js';
import { FirestoreReclaimStore } from '../../shared/src/adapters/firestore/ownership-reclaim-store.js';
import {
  FirestoreOutcomeReader,
  outcomeBatchDocId,
  outcomeBatchToFirestore,
} from '../../shared/src/adapters/firestore/worker-outcome-store.js';
import { FirestoreWorkerStore } from '../../shared/src/adapters/firestore/worker-store.js';
import { memoryLogger } from '../../shared/src/adapters/log/json-logger.js';
import { ManualClock } from '../../shared/src/ports/clock.js';
import type { OutcomeBatchRecord } from '../../shared/src/ports/workers.js';
import { clearProject, testProjectId } from '../support/emulators.js';
import { firestorePassDeps } from '../support/snapshot-pass-deps.js';
import { poolProxy } from '../support/worker-client.js';
import { record } from '../support/worker-records.js';

const projectId = testProjectId();
const db = new Firestore({ projectId });
const T0 = new Date();
const clock = new ManualClock(T0);
const at = (s: number) => new Date(T0.getTime() + s * 1000);

afterAll(() => db.terminate());
beforeEach(async () => {
  await clearProject(projectId);
});

type Lines = Array<Record<string, unknown>>;
const eventLines = (lines: Lines, event: string) => lines.filter((l) => l.event === event);

describe('workers/{id} out of shape', () => {
  /** gw-ok as stored; gw-bad with a report whose count was edited to -1. */
  async function workersWithOneEdited() {
    const seed = new FirestoreWorkerStore(db, { log: memoryLogger() });
    await seed.put(record('gw-ok', at(60)), null);
    await seed.put(
      {
        ...record('gw-bad', at(60)),
        report: {
          workerId: 'gw-bad',
          sessionId: 's',
          epoch: 1,
          receivedAt: T0,
          draining: false,
          counts: [{ proxy: 'px-1', active: 1, reserved: 0 }],
        },
      },
      null,
    );
    await db
      .collection('workers')
      .doc('gw-bad')
      .update({ 'report.counts': [{ proxy: 'px-1', active: -1, reserved: 0 }] });
  }

  const expectWarned = (lines: Lines) => {
    const warned = eventLines(lines, 'gateway.worker_invalid');
    expect(warned).toEqual([
      expect.objectContaining({
        severity: 'WARNING',
        workerId: 'gw-bad',
        fields: ['report.counts.0.active'],
      }),
    ]);
  };

  it('listInView and page leave it out, each with a WARNING naming the worker and the field', async () => {
    await workersWithOneEdited();
    const log = memoryLogger();
    const workers = new FirestoreWorkerStore(db, { log });

    const inView = await workers.listInView(T0);
    expect(inView.map((w) => w.session.workerId)).toEqual(['gw-ok']);
    expectWarned(log.lines);

    log.lines.length = 0;
    const page = await workers.page(null, 10);
    expect(page.records.map((w) => w.session.workerId)).toEqual(['gw-ok']);
    expectWarned(log.lines);
  });

  it('get reads it as no session (the next registration replaces it), with the same WARNING', async () => {
    await workersWithOneEdited();
    const log = memoryLogger();
    const workers = new FirestoreWorkerStore(db, { log });
    const read = await workers.get('gw-bad');
    expect(read).toEqual({ value: null, token: expect.any(String) });
    expectWarned(log.lines);
    log.lines.length = 0;
    expect((await workers.get('gw-ok'))?.value?.session.workerId).toBe('gw-ok');
    expect(log.lines).toEqual([]);
  });

  it('the snapshot pass’s observe logs it through the stores it is wired with', async () => {
    await workersWithOneEdited();
    const deps = firestorePassDeps(db, clock, []);
    const { input } = await observe(deps, T0);
    expect([...input.workers.keys()]).toEqual(['gw-ok']);
    expectWarned((deps.log as ReturnType<typeof memoryLogger>).lines);
  });
});

describe('workerOutcomes/* out of shape', () => {
  const tally = { ok: 3, dial: 0, proxyHandshake: 0, responseHeaders: 0, tunnel: 0, latencyMsSum: 120 };
  const batch = (sequence: number): OutcomeBatchRecord => ({
    workerId: 'gw-1',
    sessionId: 's-1',
    sequence,
    receivedAt: new Date(),
    tallies: new Map([['px-1', tally]]),
  });

  it('between leaves it out with a WARNING naming the batch and the field', async () => {
    const col = db.collection('workerOutcomes');
    await col.doc(outcomeBatchDocId(batch(1))).set(outcomeBatchToFirestore(batch(1)));
    // Edited by hand: a negative count.
    await col
      .doc(outcomeBatchDocId(batch(2)))
      .set({ ...outcomeBatchToFirestore(batch(2)), proxies: { 'px-1': { ...tally, ok: -1 } } });
    const log = memoryLogger();
    const now = Date.now();
    const read = await new FirestoreOutcomeReader(db, { log }).between(
      new Date(now - 60_000),
      new Date(now + 60_000),
    );
    expect(read.map((b) => b.sequence)).toEqual([1]);
    expect(eventLines(log.lines, 'passive.outcome_batch_invalid')).toEqual([
      expect.objectContaining({
        severity: 'WARNING',
        batch: outcomeBatchDocId(batch(2)),
        fields: ['proxies.px-1.ok'],
      }),
    ]);
  });
});

describe('reclaims/{proxy} out of shape', () => {
  const until = at(600);
  /** rc-ok as the API writes it; rc-bad edited by hand: no requestedBy. */
  async function reclaimsWithOneEdited() {
    await new FirestoreReclaimStore(db, { log: memoryLogger() }).put({
      proxy: 'rc-ok',
      uid: null,
      requestedAt: T0,
      requestedBy: 'admin',
      until,
    });
    await db
      .collection('reclaims')
      .doc('rc-bad')
      .set({ proxy: 'rc-bad', requestedAt: T0, until, expireAt: until });
  }
  const warnings = (lines: Lines) => eventLines(lines, 'gateway.reclaim_invalid');
  const warned = (fields: string[]) =>
    expect.objectContaining({ severity: 'WARNING', proxy: 'rc-bad', fields });

  it('the planner’s list leaves it out with a WARNING naming the proxy and the field', async () => {
    await reclaimsWithOneEdited();
    const log = memoryLogger();
    const listed = await new FirestoreReclaimStore(db, { log }).list(T0);
    expect(listed.map((r) => r.proxy)).toEqual(['rc-ok']);
    expect(warnings(log.lines)).toEqual([warned(['requestedBy'])]);
  });

  it('the lease service’s view logs it once per version of the document, a re-subscription included', async () => {
    await reclaimsWithOneEdited();
    const log = memoryLogger();
    const gate = new FirestoreOwnershipGate(db, clock, { log }).start();
    const bad = { ...poolProxy('rc-bad', 5), name: 'rc-bad' };
    try {
      await gate.ready(10_000);
      expect(gate.isReclaimed(bad)).toBe(false);
      expect(warnings(log.lines)).toEqual([warned(['requestedBy'])]);

      // Listened to again (as after a listener error): the same version is handed over again, not logged.
      gate.stop();
      gate.start();
      await gate.ready(10_000);
      await new FirestoreReclaimStore(db).put({
        proxy: 'rc-other',
        uid: null,
        requestedAt: T0,
        requestedBy: 'admin',
        until,
      });
      await expect.poll(() => gate.isReclaimed({ ...bad, name: 'rc-other' })).toBe(true);
      expect(warnings(log.lines)).toHaveLength(1);

      // Edited again, still out of shape: a new version, logged anew.
      await db.collection('reclaims').doc('rc-bad').update({ requestedAt: 'yesterday' });
      await expect.poll(() => warnings(log.lines).length).toBe(2);
      expect(warnings(log.lines)[1]).toEqual(warned(['requestedAt', 'requestedBy']));

      // Fixed: a reclaim, and nothing more logged.
      await db.collection('reclaims').doc('rc-bad').update({ requestedAt: T0, requestedBy: 'admin' });
      await expect.poll(() => gate.isReclaimed(bad)).toBe(true);
      expect(warnings(log.lines)).toHaveLength(2);
    } finally {
      gate.stop();
    }
  });
});
