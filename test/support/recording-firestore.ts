// A Firestore client that records what each query and batched get actually read from the emulator —
// the collection, whether the query was filtered, and how many documents came back — so a test can tell
// "read the documents in view" from "read the whole collection and filtered in memory", which the stores'
// return values cannot. With `{ documents: true }` it also records single-document gets (`doc`) and the
// reads of transactions (`tx`), so a test can count every billed read of an operation; with
// `{ listens: true }`, the documents each listener's first snapshot loads (`listen`: what a (re)subscription
// reads). Everything else goes to the real client untouched.
import {
  DocumentReference,
  type Firestore,
  type Query,
  type QuerySnapshot,
  type Transaction,
} from '@google-cloud/firestore';

export interface FirestoreRead {
  /** The collection id (a batched get's first document's collection). */
  collection: string;
  /**
   * `query`: a query with at least one where(); `scan`: a collection read whole; `getAll`: named documents;
   * `doc`: one document's get(); `tx`: a read inside a transaction (the last two only with `documents`);
   * `listen`: the first snapshot of an onSnapshot() subscription (only with `listens`).
   */
  how: 'query' | 'scan' | 'getAll' | 'doc' | 'tx' | 'listen';
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

/** A document reference whose get() is recorded; everything else is the real reference's. */
function recordingDoc(ref: DocumentReference, reads: FirestoreRead[]): DocumentReference {
  return new Proxy(ref, {
    get(target, prop) {
      const v = Reflect.get(target, prop, target);
      if (prop === 'get') {
        return async () => {
          const snap = await target.get();
          reads.push({ collection: target.parent.id, how: 'doc', docs: 1 });
          return snap;
        };
      }
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
}

/** A transaction whose reads are recorded (a document: 1, a query: the documents it returned). */
function recordingTx(tx: Transaction, reads: FirestoreRead[]): Transaction {
  return new Proxy(tx, {
    get(target, prop) {
      const v = Reflect.get(target, prop, target);
      if (prop === 'get') {
        return async (refOrQuery: DocumentReference | Query) => {
          const snap = await target.get(refOrQuery as DocumentReference);
          // A query's collection id is internal to the client: '' when it cannot be read.
          const collection =
            refOrQuery instanceof DocumentReference
              ? refOrQuery.parent.id
              : ((refOrQuery as unknown as { _queryOptions?: { collectionId?: string } })._queryOptions
                  ?.collectionId ?? '');
          const docs = 'size' in snap ? (snap as { size: number }).size : 1;
          reads.push({ collection, how: 'tx', docs });
          return snap;
        };
      }
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
}

function recordingQuery<Q extends Query>(
  q: Q,
  collection: string,
  filtered: boolean,
  reads: FirestoreRead[],
  documents = false,
  listens = false,
): Q {
  return new Proxy(q, {
    get(target, prop) {
      const v = Reflect.get(target, prop, target);
      if (prop === 'onSnapshot' && listens) {
        return (onNext: (snap: QuerySnapshot) => void, onError?: (err: Error) => void) => {
          let first = true;
          return target.onSnapshot((snap) => {
            if (first) reads.push({ collection, how: 'listen', docs: snap.size });
            first = false;
            onNext(snap);
          }, onError);
        };
      }
      if (prop === 'doc' && documents) {
        return (...args: unknown[]) =>
          recordingDoc((v as (...a: unknown[]) => DocumentReference).apply(target, args), reads);
      }
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
            documents,
            listens,
          );
      }
      return v.bind(target);
    },
  });
}

export function recordingFirestore(
  db: Firestore,
  reads: FirestoreRead[],
  opts: { documents?: boolean; listens?: boolean } = {},
): Firestore {
  const documents = opts.documents ?? false;
  const listens = opts.listens ?? false;
  return new Proxy(db, {
    get(target, prop) {
      const v = Reflect.get(target, prop, target);
      if (prop === 'collection') {
        return (path: string) =>
          recordingQuery(target.collection(path), path, false, reads, documents, listens);
      }
      if (prop === 'runTransaction' && documents) {
        return <T>(fn: (tx: Transaction) => Promise<T>, o?: Parameters<Firestore['runTransaction']>[1]) =>
          target.runTransaction((tx) => fn(recordingTx(tx, reads)), o);
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
