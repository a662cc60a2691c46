// A snapshot part's entries carry two instants, `expiresAt` and `usableUntil`, as ISO text on the wire
// (gateway-snapshot.ts). Stored, they are Firestore Timestamps, as every other instant in the database is
// (brief: documents read well in the console). The stored snapshot must read back to the very text its
// checksum was taken over, so only text that a Timestamp gives back unchanged (`toISOString()`'s form,
// which is what the planner writes) is converted; any other stays text. Parts saved as text before this
// read as they are.
import { Timestamp } from '@google-cloud/firestore';

const TIMES = ['expiresAt', 'usableUntil'] as const;

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null;

/** The text a Timestamp gives back unchanged, or null. */
function exactInstant(text: string): Date | null {
  const d = new Date(text);
  return Number.isFinite(d.getTime()) && d.toISOString() === text ? d : null;
}

/** An entry (a plain JSON value) as stored: its instants as Timestamps where that reads back exactly. */
export function storedEntry(entry: unknown): unknown {
  if (!isRecord(entry)) return entry;
  const out: Record<string, unknown> = { ...entry };
  for (const k of TIMES) {
    const v = out[k];
    const d = typeof v === 'string' ? exactInstant(v) : null;
    if (d) out[k] = Timestamp.fromDate(d);
  }
  return out;
}

/** A stored entry as the wire shape has it: Timestamps back to ISO text (anything else as it is). */
export function wireEntry(entry: unknown): unknown {
  if (!isRecord(entry)) return entry;
  const out: Record<string, unknown> = { ...entry };
  for (const k of TIMES) {
    const v = out[k];
    if (v instanceof Timestamp) out[k] = v.toDate().toISOString();
  }
  return out;
}
