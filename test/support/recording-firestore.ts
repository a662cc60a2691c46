// A Firestore client that records what each query and batched get actually read from the emulator —
// the collection, whether the query was filtered, and how many documents came back — so a test can tell
// "read the documents in view" from "read the whole collection and filtered in memory", which the stores'
// return values cannot. Everything else goes to the real client untouched.
import type { DocumentReference, Firestore, Query } from '@google-cloud/firestore';

export interface FirestoreRead {
  /** The collection id (a batched get's first document's collection). */
  collection: string;
  /** `query`: a query with at least one where(); `scan`: a collection read whole; `getAll`: named documents. */
  how: 'query' | 'scan' | 'getAll';
  docs: number;
}

const CHAIN = new Set([
  'where',
  'limit',
  'limitToLast',
  'orderBy',
  'offset',
  'select',
  'startAfter',
  'endAt',
]);

function recordingQuery<Q extends Query>(
  q: Q,
  collection: string,
  filtered: boolean,
  reads: FirestoreRead[],
): Q {
  return new Proxy(q, {
    get(target, prop) {
      const v = Reflect.get(target, prop, target);
      if (prop === 'get') {
        return async () => {
          const snap = await target.get();
          reads.push({ collection, how: filtered ? 'query' : 'scan', docs: snap.size });
          return snap;
        };
      }
      if (typeof v !== 'function') return v;
      if (typeof prop === 'string' && CHAIN.has(prop)) {
        return (...args: unknown[]) =>
          recordingQuery(
            (v as (...a: unknown[]) => Query).apply(target, args),
            collection,
            filtered || prop === 'where',
            reads,
          );
      }
      return v.bind(target);
    },
  });
}

export function recordingFirestore(db: Firestore, reads: FirestoreRead[]): Firestore {
  return new Proxy(db, {
    get(target, prop) {
      const v = Reflect.get(target, prop, target);
      if (prop === 'collection') {
        return (path: string) => recordingQuery(target.collection(path), path, false, reads);
      }
      if (prop === 'getAll') {
        return async (...refs: DocumentReference[]) => {
          const snaps = await target.getAll(...refs);
          reads.push({ collection: refs[0]?.parent.id ?? '', how: 'getAll', docs: snaps.length });
          return snaps;
        };
      }
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
}
