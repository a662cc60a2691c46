// A write's own mark. The Firestore client resends a commit whose answer was lost (UNAVAILABLE, ABORTED,
// RESOURCE_EXHAUSTED), and a preconditioned write whose first attempt had landed then fails its own
// precondition; or the call fails otherwise after the commit landed (DEADLINE_EXCEEDED, a last
// UNAVAILABLE). So a write stamps its documents with an id of its own, and a failed write is first checked
// against it: the document carrying the id says the write is there, not lost to another writer
// (docs/architecture.md § Decisions, "A write knows its own mark").
import { randomUUID } from 'node:crypto';
import type { DocumentSnapshot } from '@google-cloud/firestore';

/** The field naming the write that last wrote a document (health/{proxy}). */
export const WRITE_ID = 'writeId';

export const newWriteId = (): string => randomUUID();

/** Whether `snap` was last written by the write `writeId`, as its field `field` says. */
export const carriesWrite = (
  snap: Pick<DocumentSnapshot, 'exists' | 'get'>,
  writeId: string,
  field: string = WRITE_ID,
): boolean => snap.exists && snap.get(field) === writeId;
