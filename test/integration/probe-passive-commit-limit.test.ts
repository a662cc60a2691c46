// One passive commit stays within Firestore's 500 writes even when a single outcome batch could change more
// health states than that. Batches are taken whole (the cursor is an instant), so a first batch that alone
// changes 600 states — a gateway reporting failures on 600 proxies without being suspect, at
// PROBE_PASSIVE_MIN_SAMPLES=1 or with two API instances committing in the same millisecond — used to build
// one commit of 601 writes: refused on every tick, the cursor stuck, and every later batch's evidence waiting
// behind it until the big one fell out of the read window. Against the Firestore emulator, through a client
// that refuses commits over 500 writes as production Firestore does (the emulator does not).
import { Firestore } from '@google-cloud/firestore';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runPassivePass } from '../../functions/probe/src/passive-pass.js';
import { PASSIVE_COMMIT_CAP } from '../../functions/probe/src/passive-window.js';
import type { ProbeDeps } from '../../functions/probe/src/probe-pass.js';
import { FirestoreHealthStore } from '../../shared/src/adapters/firestore/health-store.js';
import { FirestorePassiveFeedStore } from '../../shared/src/adapters/firestore/passive-feed-store.js';
import { FirestoreOutcomeReader } from '../../shared/src/adapters/firestore/worker-outcome-store.js';
import { FirestoreWorkerStore } from '../../shared/src/adapters/firestore/worker-store.js';
import { memoryLogger } from '../../shared/src/adapters/log/json-logger.js';
import { healthInstanceKey } from '../../shared/src/domain/health/instance-key.js';
import { DEFAULT_PASSIVE_SETTINGS } from '../../shared/src/domain/health/passive-track.js';
import type { ProxyHealthState } from '../../shared/src/domain/health/proxy-health.js';
import type { ProxyResource } from '../../shared/src/domain/proxy.js';
import { type ReportedOutcome, tallyOutcomes } from '../../shared/src/domain/workers/outcomes.js';
import type { ReconcileRequest } from '../../shared/src/messages/reconcile-request.js';
import { aProxy, externalSpec } from '../../shared/src/testing/proxy-fixtures.js';
import { releaseProject, testProjectId } from '../support/emulators.js';
import { record as workerRecord } from '../support/worker-records.js';
import { MAX_WRITES_PER_COMMIT, writeLimitedFirestore } from '../support/write-limited-firestore.js';

const FAILING = 600;
/** Enough passing proxies that the worker is not suspect (600 of 800 failing is under 80 %). */
const PASSING = 200;

const outcome = (proxy: string, ok: boolean): ReportedOutcome => ({
  proxy,
  stage: ok ? 'TUNNEL' : 'DIAL',
  ok,
  latencyMs: ok ? 40 : 0,
  target: 'example.com:443',
});

const proxyNamed = (name: string): ProxyResource =>
  aProxy({ name, spec: externalSpec(), status: { ip: '203.0.113.7' } });

const healthyState = (p: ProxyResource): ProxyHealthState => ({
  proxy: p.name,
  instance: healthInstanceKey(p),
  verdict: 'AVAILABLE',
  egressProblem: null,
  latency: { reportedMs: null, reportedAt: null },
  tracks: { BASIC: { verdict: 'AVAILABLE', consecutiveOk: 2, consecutiveFail: 0 } },
  transitionAt: null,
  latencyHistory: [],
  passive: null,
});

describe('a passive commit never exceeds 500 writes, however many states one batch changes', () => {
  const projectId = testProjectId();
  let db: Firestore;
  const commits: number[] = [];
  let deps: ProbeDeps;
  let log: ReturnType<typeof memoryLogger>;
  const failing = Array.from({ length: FAILING }, (_, i) => proxyNamed(`pf-${String(i).padStart(4, '0')}`));
  const passing = Array.from({ length: PASSING }, (_, i) => proxyNamed(`pp-${String(i).padStart(4, '0')}`));
  const all = [...failing, ...passing];

  beforeAll(async () => {
    db = new Firestore({ projectId });
    const limited = writeLimitedFirestore(db, commits);
    const health = new FirestoreHealthStore(limited);
    // Every failing proxy has an active verdict on its current instance (gateways only see such proxies).
    await health.writeMany(failing.map((p) => ({ state: healthyState(p), base: null })));

    // One outcome batch, recorded as the API records it (same batched write as the worker's sequence).
    const workers = new FirestoreWorkerStore(db);
    const rec = workerRecord('gw-1', new Date(Date.now() + 3600_000));
    await workers.put(rec, null);
    const current = await workers.get('gw-1');
    const outcomes = [
      ...failing.map((p) => outcome(p.name, false)),
      ...passing.map((p) => outcome(p.name, true)),
    ];
    await workers.putOutcomeSequence('gw-1', 1, current!.token, {
      workerId: 'gw-1',
      sessionId: rec.session.sessionId,
      sequence: 1,
      receivedAt: new Date(),
      tallies: tallyOutcomes(outcomes, () => true).tallies,
    });

    log = memoryLogger();
    const published: ReconcileRequest[] = [];
    deps = {
      health,
      publisher: { publish: async (r) => void published.push(r) },
      secrets: { access: async () => '' },
      prober: {} as ProbeDeps['prober'],
      log,
      recorder: {} as ProbeDeps['recorder'],
      tiers: { echoUrl: null, callerIps: [], rejectUnauthorized: true },
      concurrency: 1,
      passive: {
        outcomes: new FirestoreOutcomeReader(limited),
        feed: new FirestorePassiveFeedStore(limited),
        settings: DEFAULT_PASSIVE_SETTINGS,
        // PROBE_PASSIVE_MIN_SAMPLES=1: one outcome is a signal.
        rule: { minSamples: 1, maxFailureRatio: 0.5 },
        settleMs: 0,
      },
    };
  }, 60_000);

  afterAll(async () => {
    await db?.terminate();
    await releaseProject(projectId);
  });

  it('the batch is consumed in one commit of at most cap + 1 writes; the states past the cap are left out and logged', async () => {
    commits.length = 0;
    const counts = await runPassivePass(deps, all, new Date(Date.now() + 1000));
    expect(counts).toMatchObject({ outcomeBatches: 1, written: PASSIVE_COMMIT_CAP });
    expect(Math.max(...commits)).toBeLessThanOrEqual(MAX_WRITES_PER_COMMIT);
    expect(Math.max(...commits)).toBe(PASSIVE_COMMIT_CAP + 1);

    const cursor = await db.doc('cursors/probe-passive').get();
    expect(cursor.exists).toBe(true);
    const states = await new FirestoreHealthStore(db).getMany(failing.map((p) => p.name));
    const counted = [...states.values()].filter((s) => s.state.passive?.track.consecutiveFail === 1);
    expect(counted).toHaveLength(PASSIVE_COMMIT_CAP);
    expect(log.lines).toContainEqual(
      expect.objectContaining({
        message: expect.stringContaining('left uncounted'),
        uncounted: FAILING - PASSIVE_COMMIT_CAP,
      }),
    );
  });

  it('the next tick finds the batch consumed: the cursor moved past it', async () => {
    const counts = await runPassivePass(deps, all, new Date(Date.now() + 2000));
    expect(counts.outcomeBatches).toBe(0);
  });
});
