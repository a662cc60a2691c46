// A snapshot pass on the real Firestore stores, as the deployed function wires them (the 7-day sweep), with
// a publisher and a pass requester that record what they are given. The lock is taken for 130 s, the most
// a deployed pass may hold it (the function's 120 s timeout + 10 s), and never extended (no lockHoldMs):
// these tests move a ManualClock, and the heartbeat is under test on its own (snapshot-pass-lock-heartbeat).
import type { Firestore } from '@google-cloud/firestore';
import { firestoreStores } from '../../functions/snapshot/src/firestore-stores.js';
import type { SnapshotHandlerDeps } from '../../functions/snapshot/src/handler.js';
import { FirestoreProxyStore } from '../../shared/src/adapters/firestore/proxy-store.js';
import { FirestoreWorkerStore } from '../../shared/src/adapters/firestore/worker-store.js';
import { memoryLogger } from '../../shared/src/adapters/log/json-logger.js';
import { DEFAULT_WORKER_SETTINGS } from '../../shared/src/domain/workers/settings.js';
import { type GatewaySnapshotMessage, sha256Hex } from '../../shared/src/messages/gateway-snapshot.js';
import type { SnapshotRequest } from '../../shared/src/messages/worker-snapshot-request.js';
import type { ManualClock } from '../../shared/src/ports/clock.js';
import type { SnapshotRequester } from '../../shared/src/ports/workers-snapshots.js';
import { poolProxy } from './worker-client.js';
import { record } from './worker-records.js';

export const PASS_LOCK_MS = 130_000;

/** The pass requests the handler sends (snapshot-requests), in order. */
export class RecordingSnapshotRequester implements SnapshotRequester {
  readonly requests: SnapshotRequest[] = [];

  async request(req: SnapshotRequest): Promise<void> {
    this.requests.push(req);
  }
}

/** `size` gateway-pool proxies pz-0… (100 created at a time) and one live worker, gw-a, until `workerUntil`. */
export async function poolFleet(db: Firestore, size: number, workerUntil: Date): Promise<void> {
  const proxies = new FirestoreProxyStore(db);
  for (let i = 0; i < size; i += 100) {
    await Promise.all(
      Array.from({ length: Math.min(100, size - i) }, (_, k) =>
        proxies.create(poolProxy(`pz-${i + k}`, (i + k) % 250)),
      ),
    );
  }
  await new FirestoreWorkerStore(db).put(record('gw-a', workerUntil), null);
}

export function firestorePassDeps(
  db: Firestore,
  clock: ManualClock,
  published: GatewaySnapshotMessage[],
  holder = 'unused',
): SnapshotHandlerDeps & { requester: RecordingSnapshotRequester } {
  const log = memoryLogger();
  return {
    ...firestoreStores(db, log),
    requester: new RecordingSnapshotRequester(),
    publisher: {
      publish: async (m) => {
        published.push(m);
        return String(published.length);
      },
    },
    clock,
    log,
    settings: DEFAULT_WORKER_SETTINGS,
    sha256: sha256Hex,
    lockMs: PASS_LOCK_MS,
    sweep: { afterMs: 7 * 86_400_000, batch: 5 },
    retention: { afterMs: 7 * 86_400_000, batch: 5 },
    newHolder: () => holder,
  };
}

/** Holder ids `holder-1`, `holder-2`, … : a new one per pass, as the deployed function draws them. */
export function countingHolders(): () => string {
  let n = 0;
  return () => `holder-${++n}`;
}
