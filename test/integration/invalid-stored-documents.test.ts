// A stored document that no longer fits its schema (edited by hand in the console, written by an older
// version) is left out by the reader that meets it — it must not fail the pass — but never silently: one
// WARNING names the document and the failing field paths, never their values. On the Firestore emulator,
// the documents edited with the real client as an operator would.
import { Firestore } from '@google-cloud/firestore';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { observe } from '../../functions/snapshot/src/observe.js';
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
