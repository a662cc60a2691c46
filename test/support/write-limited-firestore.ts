// A Firestore client that refuses a batched write of more than 500 operations, as production Firestore
// does ("maximum 500 writes allowed per request", INVALID_ARGUMENT) and the emulator does not: a commit
// the emulator accepts may still fail on GCP every time. It records each commit's size so a test can show
// what a pass wrote. Everything else goes to the real client untouched.
import type { Firestore, WriteBatch } from '@google-cloud/firestore';

export const MAX_WRITES_PER_COMMIT = 500;
const INVALID_ARGUMENT = 3;
const OPS = new Set(['create', 'set', 'update', 'delete']);

function limitedBatch(batch: WriteBatch, commits: number[]): WriteBatch {
  let ops = 0;
  const proxy: WriteBatch = new Proxy(batch, {
    get(target, prop) {
      const v = Reflect.get(target, prop, target);
      if (typeof v !== 'function') return v;
      if (typeof prop === 'string' && OPS.has(prop)) {
        return (...args: unknown[]) => {
          ops++;
          (v as (...a: unknown[]) => unknown).apply(target, args);
          return proxy;
        };
      }
      if (prop === 'commit') {
        return async () => {
          commits.push(ops);
          if (ops > MAX_WRITES_PER_COMMIT) {
            throw Object.assign(new Error(`${ops} writes: maximum 500 writes allowed per request`), {
              code: INVALID_ARGUMENT,
            });
          }
          return target.commit();
        };
      }
      return v.bind(target);
    },
  });
  return proxy;
}

/** `commits` receives the number of writes of every batch committed through the client. */
export function writeLimitedFirestore(db: Firestore, commits: number[]): Firestore {
  return new Proxy(db, {
    get(target, prop) {
      const v = Reflect.get(target, prop, target);
      if (prop === 'batch') return () => limitedBatch(target.batch(), commits);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
}
