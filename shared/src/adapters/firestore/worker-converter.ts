// workers/{workerId} ⇄ WorkerRecord. Flat named fields and Timestamps so the session reads well in the
// console; the last report keeps its counts as a list of {proxy, active, reserved} (as sent). Decoding is
// defensive: anyone with console access can edit a document, and a document that no longer fits is
// treated as no session at all (the worker registers again).
import { type DocumentData, Timestamp } from '@google-cloud/firestore';
import { z } from 'zod';
import { storedFields } from '../../domain/stored-issues.js';
import { BOUND_FROM_KEPT } from '../../domain/workers/session.js';
import type { WorkerRecord } from '../../ports/workers.js';

const ts = z.instanceof(Timestamp).transform((t) => t.toDate());
const int = z.number().int();

const ReportDoc = z.object({
  sessionId: z.string(),
  epoch: int,
  receivedAt: ts,
  draining: z.boolean(),
  counts: z.array(z.object({ proxy: z.string(), active: int.min(0), reserved: int.min(0) })),
});

const WorkerDoc = z.object({
  workerId: z.string(),
  instanceId: z.string(),
  sessionId: z.string(),
  zone: z.string(),
  protocolVersion: int,
  principal: z.string(),
  registeredAt: ts,
  validUntil: ts,
  ackedVersion: int.nullable(),
  ackedEpoch: int.nullable(),
  ackedChecksum: z.string().nullable(),
  // Absent in a document written before it: none.
  // Room past BOUND_FROM_KEPT for a newer release that keeps more (read whole; this one keeps its own few).
  boundFrom: z
    .array(z.string())
    .max(4 * BOUND_FROM_KEPT)
    .nullable()
    .optional(),
  lastReportSequence: int.nullable(),
  lastReportDigest: z.string().nullable(),
  outcomeSequence: int,
  report: ReportDoc.nullable(),
});

export function workerToFirestore({ session: s, report: r }: WorkerRecord): DocumentData {
  return {
    workerId: s.workerId,
    instanceId: s.instanceId,
    sessionId: s.sessionId,
    zone: s.zone,
    protocolVersion: s.protocolVersion,
    principal: s.principal,
    registeredAt: Timestamp.fromDate(s.registeredAt),
    validUntil: Timestamp.fromDate(s.validUntil),
    ackedVersion: s.ackedVersion,
    ackedEpoch: s.ackedEpoch,
    ackedChecksum: s.ackedChecksum,
    boundFrom: s.boundFrom ?? null,
    lastReportSequence: s.lastReportSequence,
    lastReportDigest: s.lastReportDigest,
    outcomeSequence: s.outcomeSequence,
    report: r
      ? {
          sessionId: r.sessionId,
          epoch: r.epoch,
          receivedAt: Timestamp.fromDate(r.receivedAt),
          draining: r.draining,
          counts: r.counts.map((c) => ({ proxy: c.proxy, active: c.active, reserved: c.reserved })),
        }
      : null,
  };
}

/** The record, or the field paths (never their values) that do not fit: a reader logs which ones. */
export type WorkerDocRead = { record: WorkerRecord } | { fields: string[] };

export function readWorkerDoc(data: DocumentData | undefined): WorkerDocRead {
  const parsed = WorkerDoc.safeParse(data);
  if (!parsed.success) return { fields: storedFields(parsed.error) };
  const { report, ...s } = parsed.data;
  return {
    record: {
      session: s,
      report: report ? { workerId: s.workerId, ...report } : null,
    },
  };
}
