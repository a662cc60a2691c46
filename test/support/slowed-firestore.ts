// A Firestore client every document read and write (and batch commit) of which waits `slow.ms` before it is
// sent to the real client: a Firestore slow on every call (a degraded backend), each call answering just
// inside the API's per-call bound. `slow.ms` may change between calls; `slow.calls` counts them.
import type { CollectionReference, DocumentReference, Firestore, WriteBatch } from '@google-cloud/firestore';

const DOC_CALLS = new Set(['get', 'create', 'set', 'update', 'delete']);

export interface Slow {
  ms: number;
  calls: number;
}

/** `target` with each of `calls` waiting `slow.ms` first, and `wrap` applied to what the others return. */
function slowed<T extends object>(
  target: T,
  slow: Slow,
  calls: Set<string>,
  wrap: (prop: string, value: unknown) => unknown = (_, v) => v,
): T {
  return new Proxy(target, {
    get(t, prop) {
      const v = Reflect.get(t, prop, t);
      if (typeof v !== 'function') return v;
      const f = v as (...a: unknown[]) => unknown;
      if (typeof prop === 'string' && calls.has(prop))
        return async (...args: unknown[]) => {
          slow.calls++;
          await new Promise((r) => setTimeout(r, slow.ms));
          return f.apply(t, args);
        };
      return (...args: unknown[]) => wrap(String(prop), f.apply(t, args));
    },
  });
}

export function slowedFirestore(db: Firestore, slow: Slow): Firestore {
  const doc = (ref: DocumentReference) => slowed(ref, slow, DOC_CALLS);
  const collection = (ref: CollectionReference) =>
    slowed(ref, slow, new Set(), (prop, v) => (prop === 'doc' ? doc(v as DocumentReference) : v));
  return slowed(db, slow, new Set(), (prop, v) => {
    if (prop === 'collection') return collection(v as CollectionReference);
    if (prop === 'batch') return slowed(v as WriteBatch, slow, new Set(['commit']));
    return v;
  });
}
