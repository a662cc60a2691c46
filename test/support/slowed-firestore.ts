// A Firestore client every document read and write (and batch commit) of which waits `slow.ms` before it is
// sent to the real client: a Firestore slow on every call (a degraded backend), each call answering just
// inside the API's per-call bound. `slow.ms` may change between calls; `slow.calls` counts them.
import type { CollectionReference, DocumentReference, Firestore, WriteBatch } from '@google-cloud/firestore';
import { intercept } from './held-up-firestore.js';

const DOC_CALLS = new Set(['get', 'create', 'set', 'update', 'delete']);

export interface Slow {
  ms: number;
  calls: number;
}

/** `target` with each of `calls` waiting `slow.ms` first; its other methods as they are. */
function slowed<T extends object>(target: T, slow: Slow, calls: Set<string>): T {
  return intercept(target, (prop) => {
    if (typeof prop !== 'string' || !calls.has(prop)) return undefined;
    const f = Reflect.get(target, prop, target) as (...a: unknown[]) => unknown;
    return async (...args: unknown[]) => {
      slow.calls++;
      await new Promise((r) => setTimeout(r, slow.ms));
      return f.apply(target, args);
    };
  });
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
