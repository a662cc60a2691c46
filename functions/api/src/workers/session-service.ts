// Registration, ACK and the latest snapshot (contract §2, §3, §7; docs/gateway-control-plane.md).

import { acceptAck, isFirstAck } from '../../../../shared/src/domain/workers/ack.js';
import { endsOverdue, owedBy } from '../../../../shared/src/domain/workers/ack-owed.js';
import {
  ControllerProtocol,
  negotiateProtocol,
  readableAt,
} from '../../../../shared/src/domain/workers/protocol.js';
import { register, touch } from '../../../../shared/src/domain/workers/session.js';
import type { GatewaySnapshot } from '../../../../shared/src/messages/gateway-snapshot.js';
import {
  type AckRequestBody,
  type AckResponseBody,
  type RegisterRequestBody,
  type RegisterResponseBody,
  WORKER_LIMITS,
} from '../../../../shared/src/messages/worker-api.js';
import type { WorkerPrincipal } from './auth.js';
import { conflict, WorkerApiError } from './errors.js';
import {
  authorise,
  loadSession,
  requestPass,
  type WorkerServiceDeps,
  withRetry,
  writeAsking,
} from './service-deps.js';

const ackMessage = {
  unknown_snapshot: 'no such snapshot was built for this worker: fetch the latest one',
  checksum_mismatch: 'the checksum or epoch differs from the snapshot built: fetch the latest one',
  stale_epoch: 'that snapshot is of an older ownership epoch: a newer one is on its way',
  version_regression: 'an older version than the one already acknowledged',
} as const;

export async function registerWorker(
  deps: WorkerServiceDeps,
  principal: WorkerPrincipal,
  body: RegisterRequestBody,
): Promise<RegisterResponseBody> {
  const protocol = negotiateProtocol(body.supportedProtocolVersion);
  if (!protocol.ok) {
    throw new WorkerApiError(
      400,
      'unsupported_protocol_version',
      `protocol ${body.supportedProtocolVersion} is not spoken here`,
      {
        supported: { min: ControllerProtocol.min, max: ControllerProtocol.max },
      },
    );
  }
  authorise(principal, body.workerId);
  // The subscription first: a session is only handed out once its snapshots have somewhere to go.
  const snapshotSubscription = await deps.subscriptions.ensure(body.workerId);
  const decision = await withRetry('register', async () => {
    const stored = await deps.workers.get(body.workerId);
    const d = register(
      stored?.value?.session ?? null,
      { ...body, protocolVersion: protocol.version, principal: principal.label },
      deps.clock.now(),
      deps.newSessionId(),
      deps.settings.sessionTtlMs,
    );
    if (d.kind === 'new') await deps.workers.put({ session: d.session, report: null }, stored?.token ?? null);
    return d;
  });
  if (decision.kind === 'new') {
    deps.log.info('worker registered', {
      event: 'gateway.worker_registered',
      workerId: body.workerId,
      instanceId: body.instanceId,
      sessionId: decision.session.sessionId,
      superseded: decision.supersededSessionId,
      principal: principal.label,
    });
  }
  // A retried registration gets its session back and asks again: its first pass request may have been the
  // call that failed (requestPass only logs), and a worker with no snapshot makes no call that keeps the
  // session. Asking again is idempotent (one planning pass), and resumes are rare. The request is best
  // effort and the ownership epoch is needed: made together, so a slow publish is the call cut by the
  // request's budget — made before the read, it spent the time the read needed, and every retry was 503.
  const [ownershipEpoch] = await Promise.all([
    deps.ownership.epoch(),
    requestPass(deps, decision.kind === 'new' ? 'register' : 'register-resumed', body.workerId),
  ]);
  const s = deps.settings;
  return {
    protocolVersion: protocol.version,
    sessionId: decision.session.sessionId,
    resumed: decision.kind === 'resumed',
    ownershipEpoch,
    maxStaleAgeSeconds: s.maxStaleAgeSeconds,
    snapshotSubscription,
    reportIntervalSeconds: s.reportIntervalSeconds,
    reportTtlSeconds: s.reportTtlMs / 1000,
    sessionTtlSeconds: s.sessionTtlMs / 1000,
    limits: { ...WORKER_LIMITS },
  };
}

export async function acknowledgeSnapshot(
  deps: WorkerServiceDeps,
  principal: WorkerPrincipal,
  workerId: string,
  body: AckRequestBody,
): Promise<AckResponseBody> {
  const { answer, pass } = await withRetry('ack', async () => {
    const stored = await loadSession(deps, principal, workerId, body.sessionId);
    const [header, epoch] = await Promise.all([deps.snapshots.header(workerId), deps.ownership.epoch()]);
    const d = acceptAck(stored.value.session, body, header?.recent ?? [], epoch);
    if (!d.ok) throw conflict(d.error, ackMessage[d.error]);
    // A replay of a bound below the current epoch is answered as before, but keeps the session alive no
    // more than the reports on it do (refused stale_epoch): a worker left behind by a drain lapses on time.
    if (d.unchanged && body.epoch < epoch) {
      return {
        answer: { acceptedVersion: body.version, acceptedEpoch: body.epoch, unchanged: true },
        pass: null,
      };
    }
    const now = deps.clock.now();
    const session = touch(d.session, now, deps.settings.sessionTtlMs);
    const before = stored.value.session;
    const owed = owedBy(header, before);
    // Decided on the record this write is conditioned on. A replay of the bound asks again: it follows an
    // answer lost on the way, which may have been the ACK that set the bound, written after its call was
    // given up (below) when there was no time left to ask. The gateway ACKs a snapshot only while it is
    // not its bound, so a replay is a lost answer — or the re-ACK of what it holds under a session that
    // kept its process's bound across a protocol change (register) — never a duplicate delivery.
    const pass = isFirstAck(before, d)
      ? 'first-ack'
      : endsOverdue(owed, before.ackedVersion, session.ackedVersion, now, deps.settings.maxStaleAgeSeconds)
        ? 'ack-resumed'
        : d.unchanged
          ? 'ack-replayed'
          : null;
    await writeAsking(
      deps,
      () => deps.workers.put({ ...stored.value, session }, stored.token),
      pass,
      workerId,
    );
    return {
      answer: { acceptedVersion: body.version, acceptedEpoch: body.epoch, unchanged: d.unchanged },
      pass,
    };
  });
  // The session is given proxies from its first ACK on (plan-pass.ts assignable), and again from the ACK
  // that ends a stretch of snapshots it did not take (workers/ack-owed.ts): a pass now, not at the next
  // tick a minute away; and on a replay of the bound (`ack-replayed`): its first answer may have been lost
  // after the write landed, with no time left to ask. Best effort, as at registration: the tick runs the
  // pass anyway.
  if (pass) await requestPass(deps, pass, workerId);
  return answer;
}

export async function latestSnapshot(
  deps: WorkerServiceDeps,
  principal: WorkerPrincipal,
  workerId: string,
  sessionId: string,
): Promise<GatewaySnapshot> {
  const stored = await loadSession(deps, principal, workerId, sessionId);
  const full = await deps.snapshots.loadFull(workerId);
  if (!full) throw new WorkerApiError(404, 'no_snapshot', 'no snapshot was built for this worker yet');
  // Built for a newer session of this worker (a rolled-back gateway): the pass its registration asked for
  // builds one it reads, and Pub/Sub brings it.
  if (!readableAt(full.proxies, stored.value.session.protocolVersion)) {
    throw new WorkerApiError(
      404,
      'no_snapshot',
      'no snapshot was built for this session’s protocol version yet',
    );
  }
  return full;
}
