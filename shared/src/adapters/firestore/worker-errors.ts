// How the gateway control plane's Firestore adapters read errors and versions: gRPC status codes (never
// message text) and the document updateTime as the opaque version token of the ports.
import { z } from 'zod';
import { WorkerStoreError } from '../../ports/workers.js';
import { timestampOfVersion, versionOf } from './proxy-converter.js';

export const INVALID_ARGUMENT = 3;
export const ALREADY_EXISTS = 6;
export const FAILED_PRECONDITION = 9;
export const NOT_FOUND = 5;

export const codeOf = (err: unknown): number | undefined => {
  const code = (err as { code?: unknown })?.code;
  return typeof code === 'number' ? code : undefined;
};

/** A write that lost a race (precondition failed, document already created, or gone) is a conflict. */
export function workerStoreFailure(err: unknown, what: string): WorkerStoreError {
  if (err instanceof WorkerStoreError) return err;
  if (err instanceof z.ZodError)
    return new WorkerStoreError('invalid', `${what}: a stored document does not fit`, { cause: err });
  const code = codeOf(err);
  if (code === FAILED_PRECONDITION || code === ALREADY_EXISTS || code === NOT_FOUND) {
    return new WorkerStoreError('conflict', `${what}: the document changed meanwhile`, { cause: err });
  }
  // INVALID_ARGUMENT is Firestore refusing the write as such (a document over 1 MiB, a reserved `__x__`
  // field name): answered "retry", a worker re-sent the same report every second and its capacity fell to 0.
  if (code === INVALID_ARGUMENT)
    return new WorkerStoreError('rejected', `${what}: refused by the store`, { cause: err });
  return new WorkerStoreError('unavailable', `${what} failed`, { cause: err });
}

export { timestampOfVersion, versionOf };

export function requireTimestamp(token: string) {
  const t = timestampOfVersion(token);
  if (!t) throw new WorkerStoreError('conflict', `not a version token: ${token}`);
  return t;
}
