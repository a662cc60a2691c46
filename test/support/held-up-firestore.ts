// A Firestore client whose reads of given documents, and batched writes that touch them, wait until
// `gate` settles before they are sent: calls held up in Firestore (a hot document, a degraded backend)
// while every other document's go through. Everything else goes to the real client untouched.
import type { CollectionReference, DocumentReference, Firestore, WriteBatch } from '@google-cloud/firestore';

const OPS = new Set(['create', 'set', 'update', 'delete']);

/** `target` with its methods bound to it, except those `override` answers (undefined: not overridden). */
export function intercept<T extends object>(target: T, override: (prop: string | symbol) => unknown): T {
  return new Proxy(target, {
    get(t, prop) {
      const own = override(prop);
      if (own !== undefined) return own;
      const v = Reflect.get(t, prop, t);
      return typeof v === 'function' ? v.bind(t) : v;
    },
  });
}

export interface HeldUp {
  /** Documents (e.g. `leaseState/p1`) whose batched writes wait. */
  commits?: string[];
  /** Documents whose reads (`doc(id).get()`) wait. */
  reads?: string[];
}

export function heldUpFirestore(db: Firestore, held: HeldUp, gate: Promise<void>): Firestore {
  const commits = new Set(held.commits ?? []);
  const reads = new Set(held.reads ?? []);
  const batch = (): WriteBatch => {
    const target = db.batch();
    let touches = false;
    const proxy: WriteBatch = intercept(target, (prop) => {
      if (typeof prop === 'string' && OPS.has(prop)) {
        return (ref: DocumentReference, ...rest: unknown[]) => {
          if (commits.has(ref.path)) touches = true;
          (Reflect.get(target, prop) as (...a: unknown[]) => unknown).apply(target, [ref, ...rest]);
          return proxy;
        };
      }
      if (prop === 'commit')
        return async () => {
          if (touches) await gate;
          return target.commit();
        };
      return undefined;
    });
    return proxy;
  };
  const doc = (ref: DocumentReference): DocumentReference =>
    reads.has(ref.path)
      ? intercept(ref, (prop) =>
          prop === 'get'
            ? async () => {
                await gate;
                return ref.get();
              }
            : undefined,
        )
      : ref;
  const collection = (ref: CollectionReference): CollectionReference =>
    intercept(ref, (prop) => (prop === 'doc' ? (id: string) => doc(ref.doc(id)) : undefined));
  return intercept(db, (prop) => {
    if (prop === 'batch') return batch;
    if (prop === 'collection') return (path: string) => collection(db.collection(path));
    return undefined;
  });
}
