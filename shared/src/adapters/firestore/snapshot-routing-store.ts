// gatewayConfig/routing: the ordered routes every worker's snapshot carries, written by the admin API. A
// document that no longer fits the route schema is refused (WorkerStoreError `invalid`), never read as the
// default routing: the snapshot pass then plans with the routing its stored snapshots carry (the one last
// published: functions/snapshot/src/last-routing.ts) and logs it, and GET answers it as out of shape. The
// one exception is a routing whose only fault is a repeated route name (stored before the API refused
// that): it is read with the later duplicates dropped and named (domain/snapshots/stored-routing.ts), so
// the pass goes on and logs it instead of failing every time. Writes must fit the schema whole.
//
// The routes' target checks are stored beside them, in a `targetChecks` map keyed by route name, not in
// each route: `routes` stays exactly the wire form, so a snapshot function or probe of a release before
// target checks (whose route schema is strict, but whose document schema drops unknown keys) still reads
// the document after a rollback, instead of failing every pass until every gateway goes stale.
//
// Each write stores its own `putId`: a commit that lands while its call fails (DEADLINE_EXCEEDED, a last
// UNAVAILABLE) is run again by the client, and that run must know the routing it reads for its own —
// read as another writer's, an If-Match PUT answered 412 for its own change and one without answered
// "unchanged", and neither asked for the snapshot pass that carries it to the gateways.
import { randomUUID } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { type Firestore, Timestamp } from '@google-cloud/firestore';
import { z } from 'zod';
import { firstOfEachName } from '../../domain/snapshots/stored-routing.js';
import {
  RoutingRule,
  RoutingRules,
  TargetCheck,
  wireRoute,
  withoutTrailingDots,
} from '../../messages/gateway-snapshot.js';
import {
  NO_ROUTING_REVISION,
  type RoutingConfig,
  type RoutingStore,
  type RoutingWrite,
  type StoredRouting,
} from '../../ports/workers-ownership.js';
import { throwIfGivenUp } from '../deadline.js';
import { Collections } from './collections.js';
import { boundedCall, type WorkerStoreDeadlines } from './worker-deadline.js';
import { workerStoreFailure } from './worker-errors.js';

export const ROUTING_DOC = 'routing';

const RoutingDoc = z.object({
  // RoutingRule, not the wire GatewayRoute: a document written while checks were stored inside their
  // route (one commit of 2026-11-30) still reads; the map wins where both name one.
  routes: z.array(RoutingRule).max(1000),
  targetChecks: z.record(z.string(), TargetCheck).default({}),
  updatedAt: z.instanceof(Timestamp).transform((t) => t.toDate()),
  updatedBy: z.string(),
  // No `revision` here: it is read from its raw field alone (revisionOf), so one out of shape (a console
  // edit) counts as 1 instead of making the routing unreadable — GET and every snapshot pass.
});

/**
 * The stored revision, read from the raw field alone: a document that no longer fits the route schema has
 * one too (a PUT is how such a document is fixed). One written before revisions were kept counts as 1.
 */
function revisionOf(data: Record<string, unknown> | undefined): number {
  if (data === undefined) return NO_ROUTING_REVISION;
  const r = data.revision;
  return typeof r === 'number' && Number.isSafeInteger(r) && r >= 1 ? r : 1;
}

/** The stored rules: each wire route with its check, if the map names one for it. */
function joined(doc: z.infer<typeof RoutingDoc>): RoutingRule[] {
  return doc.routes.map((r) => {
    const check = Object.hasOwn(doc.targetChecks, r.name) ? doc.targetChecks[r.name] : r.targetCheck;
    return RoutingRule.parse(check ? { ...r, targetCheck: check } : r);
  });
}

export class FirestoreRoutingStore implements RoutingStore {
  private readonly callDeadlineMs: number | undefined;

  /** `opts.callDeadlineMs`: the bound of each read, and of put()'s whole transaction (worker-deadline.ts). */
  constructor(
    private readonly db: Firestore,
    opts: WorkerStoreDeadlines = {},
  ) {
    this.callDeadlineMs = opts.callDeadlineMs;
  }

  private ref() {
    return this.db.collection(Collections.gatewayConfig).doc(ROUTING_DOC);
  }

  async get(): Promise<StoredRouting | null> {
    try {
      const snap = await boundedCall(this.callDeadlineMs, 'read the gateway routing', () => this.ref().get());
      if (!snap.exists) return null;
      const doc = RoutingDoc.parse(snap.data());
      return {
        updatedAt: doc.updatedAt,
        updatedBy: doc.updatedBy,
        revision: revisionOf(snap.data()),
        ...firstOfEachName(joined(doc)),
      };
    } catch (err) {
      throw workerStoreFailure(err, 'read the gateway routing');
    }
  }

  async revision(): Promise<number> {
    try {
      const what = 'read the gateway routing revision';
      return revisionOf((await boundedCall(this.callDeadlineMs, what, () => this.ref().get())).data());
    } catch (err) {
      throw workerStoreFailure(err, 'read the gateway routing revision');
    }
  }

  async put(config: RoutingConfig, precondition?: (revision: number) => boolean): Promise<RoutingWrite> {
    try {
      const rules = withoutTrailingDots(RoutingRules.parse(config.routes));
      const targetChecks = Object.fromEntries(
        rules.flatMap((r) => (r.targetCheck ? [[r.name, r.targetCheck]] : [])),
      );
      // JSON round trip: drops undefined optionals, which Firestore refuses.
      const putId = randomUUID();
      const fields = {
        routes: JSON.parse(JSON.stringify(rules.map(wireRoute))),
        targetChecks: JSON.parse(JSON.stringify(targetChecks)),
        updatedAt: Timestamp.fromDate(config.updatedAt),
        updatedBy: config.updatedBy,
      };
      // Read and written in one transaction: two writers never both build on one revision.
      // The whole transaction is bounded (its read, its commit, the client's retries of an ABORTED one):
      // given up, it runs on and may still commit — an unknown outcome, reported unavailable (503, nothing
      // published; the next snapshot pass plans with it all the same). A retried PUT of the same routing
      // then finds it stored (unchanged); one with If-Match meets the revision it moved (412), and reads again.
      // Once given up, a body writes nothing — neither one the client re-runs (on ABORTED, UNAVAILABLE…) nor
      // one still waiting on its read: only a commit already sent can land — else a body running on after a
      // newer PUT answered 200 would write its routes over that one.
      return await boundedCall(this.callDeadlineMs, 'write the gateway routing', (signal) =>
        this.db.runTransaction(async (tx) => {
          throwIfGivenUp(signal);
          const stored = (await tx.get(this.ref())).data();
          const current = revisionOf(stored);
          // This very put landed on an attempt whose answer was lost: written, at the revision it made.
          if (stored?.putId === putId) return { written: true, revision: current };
          if (precondition && !precondition(current)) return { written: false, revision: current };
          // The same routing again (a GitOps loop re-applying it, a retried PUT whose first landed): a new
          // revision would only re-plan and re-publish every worker's snapshot for nothing.
          // (A stored document that does not parse — a revision, an updatedAt out of shape — is written over
          // all the same: the PUT is how it is fixed.)
          if (
            stored?.revision === current &&
            RoutingDoc.safeParse(stored).success &&
            isDeepStrictEqual(stored.routes, fields.routes) &&
            isDeepStrictEqual(stored.targetChecks ?? {}, fields.targetChecks)
          )
            return { written: false, unchanged: true, revision: current };
          // Again after the read: one still waiting on it when the deadline fired must not write either.
          throwIfGivenUp(signal);
          tx.set(this.ref(), { ...fields, revision: current + 1, putId });
          return { written: true, revision: current + 1 };
        }),
      );
    } catch (err) {
      throw workerStoreFailure(err, 'write the gateway routing');
    }
  }
}
