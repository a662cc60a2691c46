// A Firestore client whose batched writes that touch one document wait, before they are sent, until
// `gate` settles: a write held up in Firestore (a hot document, a degraded backend) while every other
// document's writes go through. Everything else goes to the real client untouched.
import type { DocumentReference, Firestore, WriteBatch } from '@google-cloud/firestore';

const OPS = new Set(['create', 'set', 'update', 'delete']);

function stallingBatch(batch: WriteBatch, path: string, gate: Promise<void>): WriteBatch {
  let touches = false;
  const proxy: WriteBatch = new Proxy(batch, {
    get(target, prop) {
      const v = Reflect.get(target, prop, target);
      if (typeof v !== 'function') return v;
      if (typeof prop === 'string' && OPS.has(prop)) {
        return (ref: DocumentReference, ...rest: unknown[]) => {
          if (ref.path === path) touches = true;
          (v as (...a: unknown[]) => unknown).apply(target, [ref, ...rest]);
          return proxy;
        };
      }
      if (prop === 'commit') {
        return async () => {
          if (touches) await gate;
          return target.commit();
        };
      }
      return v.bind(target);
    },
  });
  return proxy;
}

/** Batches writing the document at `path` (e.g. `leaseState/p1`) commit only once `gate` has settled. */
export function stalledCommitFirestore(db: Firestore, path: string, gate: Promise<void>): Firestore {
  return new Proxy(db, {
    get(target, prop) {
      const v = Reflect.get(target, prop, target);
      if (prop === 'batch') return () => stallingBatch(target.batch(), path, gate);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
}
