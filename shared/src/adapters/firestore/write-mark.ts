// A write's own mark. The Firestore client resends a commit whose answer was lost (UNAVAILABLE, ABORTED,
// RESOURCE_EXHAUSTED), and a preconditioned write whose first attempt had landed then fails its own
// precondition. So a write stamps its documents with an id of its own, and a conflict is first checked
// against it: the document carrying the id says the write is there, not lost to another writer
// (docs/architecture.md § Decisions, "A write knows its own mark").
import { randomUUID } from 'node:crypto';
import type { DocumentSnapshot } from '@google-cloud/firestore';

/** The field naming the write that last wrote a document (health/{proxy}, the passive cursor, proxies/{name}). */
export const WRITE_ID = 'writeId';

export const newWriteId = (): string => randomUUID();

/** Whether `snap` was last written by the write `writeId`. */
export const carriesWrite = (snap: Pick<DocumentSnapshot, 'exists' | 'get'>, writeId: string): boolean =>
  snap.exists && snap.get(WRITE_ID) === writeId;
