// A Firestore client every document read and write (and batch commit) of which waits `slow.ms` before it is
// sent to the real client: a Firestore slow on every call (a degraded backend), each call answering just
// inside the API's per-call bound. `slow.ms` may change between calls; `slow.calls` counts them.
//
// A call the API gave up on (its bound or its request's budget) is still sent once its wait is over: await
// `slowCallsSettled(slow)` before terminating the client. A read sent to a terminated client rejects in a
// promise @google-cloud/firestore discards (requestStream's `void this._clientPool.run(…)`): an unhandled
// rejection, reported against whichever file the vitest worker runs next.
import type { CollectionReference, DocumentReference, Firestore, WriteBatch } from '@google-cloud/firestore';
import { intercept } from './held-up-firestore.js';

const DOC_CALLS = new Set(['get', 'create', 'set', 'update', 'delete']);

export interface Slow {
  ms: number;
  calls: number;
}

/** Each Slow's calls not yet settled, waits included. */
const inFlight = new WeakMap<Slow, Set<Promise<unknown>>>();

/** `target` with each of `calls` waiting `slow.ms` first; its other methods as they are. */
function slowed<T extends object>(target: T, slow: Slow, calls: Set<string>): T {
  return intercept(target, (prop) => {
    if (typeof prop !== 'string' || !calls.has(prop)) return undefined;
    const f = Reflect.get(target, prop, target) as (...a: unknown[]) => unknown;
    return (...args: unknown[]) => {
      slow.calls++;
      const call = (async () => {
        await new Promise((r) => setTimeout(r, slow.ms));
        return f.apply(target, args);
      })();
      const pending = inFlight.get(slow) ?? new Set<Promise<unknown>>();
      inFlight.set(slow, pending);
      const settled: Promise<unknown> = call.then(
        () => pending.delete(settled),
        () => pending.delete(settled),
      );
      pending.add(settled);
      return call;
    };
  });
}

/** Resolves once every call made through `slow`'s clients so far, and any made while waiting, has settled. */
export async function slowCallsSettled(slow: Slow): Promise<void> {
  const pending = inFlight.get(slow);
  while (pending && pending.size > 0) await Promise.all(pending);
}

export function slowedFirestore(db: Firestore, slow: Slow): Firestore {
  const doc = (ref: DocumentReference) => slowed(ref, slow, DOC_CALLS);
  const collection = (ref: CollectionReference): CollectionReference =>
    intercept(ref, (prop) => (prop === 'doc' ? (id: string) => doc(ref.doc(id)) : undefined));
  return intercept(db, (prop) => {
    if (prop === 'collection') return (path: string) => collection(db.collection(path));
    if (prop === 'batch') return (): WriteBatch => slowed(db.batch(), slow, new Set(['commit']));
    return undefined;
  });
}
