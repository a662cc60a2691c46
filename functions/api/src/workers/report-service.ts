// Runtime reports and outcome batches (contract §2, §4, §5; docs/gateway-control-plane.md).
import { shutDownIdle } from '../../../../shared/src/domain/workers/drain.js';
import { acceptOutcomeBatch, tallyOutcomes } from '../../../../shared/src/domain/workers/outcomes.js';
import { acceptRuntimeReport } from '../../../../shared/src/domain/workers/runtime-report.js';
import type {
  OutcomesRequestBody,
  OutcomesResponseBody,
  RuntimeRequestBody,
  RuntimeResponseBody,
} from '../../../../shared/src/messages/worker-api.js';
import { WorkerStoreError } from '../../../../shared/src/ports/workers.js';
import type { WorkerPrincipal } from './auth.js';
import { conflict, WorkerApiError } from './errors.js';
import {
  loadSession,
  requestPass,
  sessionMessage,
  type WorkerServiceDeps,
  withRetry,
  writeAsking,
} from './service-deps.js';
import type { SnapshotNames } from './snapshot-names.js';

const reportMessage = {
  sequence_regression: 'a report sequence below the last accepted one',
  sequence_conflict: 'the last accepted sequence with other content',
  ack_bound_mismatch: 'snapshotVersion and epoch must equal the acknowledged snapshot exactly',
  no_ack: 'no snapshot acknowledged in this session yet',
  stale_epoch: 'the acknowledged snapshot is of an older ownership epoch',
  invalid_counts: 'duplicate proxies or negative counts',
  session_expired: sessionMessage.session_expired,
} as const;

export async function reportRuntime(
  deps: WorkerServiceDeps,
  principal: WorkerPrincipal,
  workerId: string,
  body: RuntimeRequestBody,
): Promise<RuntimeResponseBody> {
  const { replay, draining, pass } = await withRetry('runtime', async () => {
    // A lapsed session is judged by acceptRuntimeReport: it still takes a shutting-down worker's last word.
    const stored = await loadSession(deps, principal, workerId, body.sessionId, 'caller');
    const now = deps.clock.now();
    const d = acceptRuntimeReport(
      stored.value.session,
      body,
      await deps.ownership.epoch(),
      now,
      deps.settings.sessionTtlMs,
    );
    if (!d.ok) {
      if (d.error === 'invalid_counts')
        throw new WorkerApiError(400, 'invalid_counts', reportMessage.invalid_counts);
      if (d.error === 'stale_epoch') {
        // Every drain start raises the epoch, so from then until the worker has ACKed a snapshot of the
        // new epoch — one that already leaves the proxy out — each of its reports lands here. That window
        // is the only one in which revokeProxyIds can speed a drain up (contract §4), so the refusal
        // carries the current set as an accepted report's answer would.
        throw new WorkerApiError(409, 'stale_epoch', reportMessage.stale_epoch, {
          revokeProxyIds: Object.keys(await drainingFrom(deps, workerId)).sort(),
        });
      }
      throw conflict(d.error, reportMessage[d.error]);
    }
    const last = stored.value.report;
    const previous = last?.sessionId === body.sessionId ? last : null;
    const draining = await drainingFrom(deps, workerId);
    // A replay is judged as if no report came before it (the stored one is itself): the answer it follows
    // may have been lost after the transition's write landed, its request never made.
    const pass = passAfterReport(body, draining, d.replay ? null : previous);
    if (d.replay) return { replay: true, draining, pass };
    // The TTL runs on the controller's clock from now; observedAt is never used (contract §2).
    const report = {
      workerId,
      sessionId: body.sessionId,
      epoch: body.epoch,
      receivedAt: now,
      draining: body.draining,
      counts: body.counts,
    };
    await writeAsking(
      deps,
      () => deps.workers.put({ session: d.session, report }, stored.token),
      pass,
      workerId,
    );
    return { replay: false, draining, pass };
  });
  if (pass) await requestPass(deps, pass, workerId);
  return {
    acceptedSequence: body.reportSequence,
    replay,
    revokeProxyIds: Object.keys(draining).sort(),
    reportTtlSeconds: deps.settings.reportTtlMs / 1000,
  };
}

/**
 * The pass a report asks for: a drain it completes — its proxy absent at an epoch ≥ the drain's (or the
 * worker shutting down idle), where the report before it (`prior`) still had it or was of an epoch before
 * the drain — or a worker that just started shutting down. The next tick would run it anyway; asked now,
 * the hand-over takes seconds. Only on the transition, so a worker reporting every few seconds does not
 * ask again for a drain the planner has already seen.
 */
function passAfterReport(
  body: RuntimeRequestBody,
  draining: Record<string, number>,
  prior: { epoch: number; draining: boolean; counts: RuntimeRequestBody['counts'] } | null,
): 'drained' | 'worker-draining' | null {
  const reported = new Set(body.counts.map((c) => c.proxy));
  const before = new Set(prior?.counts.map((c) => c.proxy));
  const drainDone = Object.keys(draining).some(
    (p) =>
      !reported.has(p) &&
      (draining[p]! <= body.epoch || shutDownIdle(body)) &&
      (!prior || prior.epoch < draining[p]! || before.has(p)),
  );
  if (drainDone) return 'drained';
  return body.draining && !prior?.draining ? 'worker-draining' : null;
}

/**
 * The proxies being drained away from the worker (its latest snapshot's header) → their drain epochs. A
 * header edited out of shape reads as no drains (logged): revokeProxyIds only speeds a drain up — the
 * snapshot stays authoritative — and the report is still stored and keeps the session live, so the next
 * pass finds the worker and its save writes the header whole again. Failing the report instead (500) left
 * the worker's session to lapse on a header only an operator or the next pass could mend.
 */
async function drainingFrom(deps: WorkerServiceDeps, workerId: string): Promise<Record<string, number>> {
  try {
    return (await deps.snapshots.header(workerId))?.draining ?? {};
  } catch (err) {
    if (!(err instanceof WorkerStoreError && err.kind === 'invalid')) throw err;
    deps.log.warn('snapshot header out of shape: answering the report with no revokeProxyIds', {
      event: 'gateway.worker_header_unreadable',
      workerId,
      error: err,
    });
    return {};
  }
}

export async function reportOutcomes(
  deps: WorkerServiceDeps & { names: SnapshotNames },
  principal: WorkerPrincipal,
  workerId: string,
  body: OutcomesRequestBody,
): Promise<OutcomesResponseBody> {
  return withRetry('outcomes', async () => {
    const stored = await loadSession(deps, principal, workerId, body.sessionId);
    const { session } = stored.value;
    const d = acceptOutcomeBatch(session, body.sequence);
    if (d.kind === 'duplicate')
      return { acceptedSequence: d.acceptedSequence, duplicate: true, recorded: 0, ignored: 0 };
    // Only proxies this worker has business with count: those of its latest snapshot and those being
    // drained away from it (names.relevant). Not those its runtime report names: a report's counts are
    // never checked against ownership (they count only where the ownership names the reporter), so a
    // worker credential could report load on any proxy and then fail it on the PASSIVE track with DIAL
    // failures — another worker's, or a crawler-only one no gateway owns.
    const relevant = await deps.names.relevant(workerId);
    const tally = tallyOutcomes(body.outcomes, (p) => relevant.has(p));
    const batch =
      tally.tallies.size === 0
        ? null
        : {
            workerId,
            sessionId: body.sessionId,
            sequence: body.sequence,
            // Only the TTL uses this clock: the stored receivedAt is the commit time (worker-outcome-store.ts).
            receivedAt: deps.clock.now(),
            tallies: tally.tallies,
          };
    await deps.workers.putOutcomeSequence(workerId, body.sequence, stored.token, batch);
    return {
      acceptedSequence: body.sequence,
      duplicate: false,
      recorded: tally.recorded,
      ignored: tally.ignored,
    };
  });
}
