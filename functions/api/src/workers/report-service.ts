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
  const { replay, previous } = await withRetry('runtime', async () => {
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
    if (d.replay) return { replay: true, previous };
    await deps.workers.put(
      {
        session: d.session,
        // The TTL runs on the controller's clock from now; observedAt is never used (contract §2).
        report: {
          workerId,
          sessionId: body.sessionId,
          epoch: body.epoch,
          receivedAt: now,
          draining: body.draining,
          counts: body.counts,
        },
      },
      stored.token,
    );
    return { replay: false, previous };
  });
  const draining = await drainingFrom(deps, workerId);
  const revokeProxyIds = Object.keys(draining).sort();
  // A drain this report completes — its proxy absent at an epoch ≥ the drain's, where the previous report
  // still had it or was too old to count — or a worker that just started shutting down: ask for a pass
  // now rather than at the next tick. Only on the transition, so a worker reporting every few seconds
  // does not ask again for a drain the planner has already seen. A replay is judged as if no report came
  // before it (the stored one is itself): it follows an answer lost on the way, which may have been the
  // report that made the transition — its write landed after its call was given up (a deadline or the
  // budget cut it: 503) and its own request was never made. A pass is idempotent and a replay rare.
  const prior = replay ? null : previous;
  const reported = new Set(body.counts.map((c) => c.proxy));
  const before = new Set(prior?.counts.map((c) => c.proxy));
  const drainDone = revokeProxyIds.some(
    (p) =>
      !reported.has(p) &&
      (draining[p]! <= body.epoch || shutDownIdle(body)) &&
      (!prior || prior.epoch < draining[p]! || before.has(p)),
  );
  if (drainDone || (body.draining && !prior?.draining)) {
    await requestPass(deps, drainDone ? 'drained' : 'worker-draining', workerId);
  }
  return {
    acceptedSequence: body.reportSequence,
    replay,
    revokeProxyIds,
    reportTtlSeconds: deps.settings.reportTtlMs / 1000,
  };
}

/**
 * The proxies being drained away from the worker (its latest snapshot's header) → their drain epochs. A
 * header edited out of shape reads as no drains (logged): revokeProxyIds only speeds a drain up — the
 * snapshot stays authoritative — and the report, already stored, keeps the session live, so the next pass
 * finds the worker and its save writes the header whole again. Failing the report instead (500) answered
 * a stored report as failed, whose retry, a replay, skipped the pass request below.
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
