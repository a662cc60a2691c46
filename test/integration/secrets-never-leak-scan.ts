// What the leak scan reads: every document of a Firestore project (all collections, subcollections
// included, with the real client), every line of every log file of a run, and every API exchange a test
// made — each turned into plain text in which a secret value would show, however it was encoded.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { DocumentReference, Firestore } from '@google-cloud/firestore';

/** One place text was found, and the text. */
export interface Exhibit {
  where: string;
  text: string;
}

/** A value as text; bytes both as UTF-8 and as base64, so an encoded secret cannot hide. */
function textOf(value: unknown): string {
  if (value instanceof Uint8Array) {
    const buf = Buffer.from(value);
    return `${buf.toString('utf8')} ${buf.toString('base64')}`;
  }
  if (Array.isArray(value)) return value.map(textOf).join(' ');
  if (value && typeof value === 'object') {
    const ctor = (value as object).constructor?.name;
    if (ctor === 'Timestamp' || ctor === 'GeoPoint' || ctor === 'DocumentReference')
      return JSON.stringify(value);
    return Object.entries(value)
      .map(([k, v]) => `${k}=${textOf(v)}`)
      .join(' ');
  }
  return String(value);
}

async function dumpDocument(ref: DocumentReference, out: Exhibit[]): Promise<void> {
  const snap = await ref.get();
  if (snap.exists) out.push({ where: `firestore ${ref.path}`, text: `${ref.path} ${textOf(snap.data())}` });
  for (const sub of await ref.listCollections()) {
    for (const doc of await sub.listDocuments()) await dumpDocument(doc, out);
  }
}

/** Every document of the project, walked from the root collections down. */
export async function dumpFirestore(db: Firestore): Promise<Exhibit[]> {
  const out: Exhibit[] = [];
  for (const collection of await db.listCollections()) {
    // listDocuments also finds "missing" parents that only hold subcollections.
    for (const doc of await collection.listDocuments()) await dumpDocument(doc, out);
  }
  return out;
}

/** Every line of every file in `dir` (function logs, the API's log, whatever a process wrote). */
export function logLines(dir: string): Exhibit[] {
  return readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isFile())
    .flatMap((e) =>
      readFileSync(join(dir, e.name), 'utf8')
        .split('\n')
        .map((text, i) => ({ where: `${e.name}:${i + 1}`, text })),
    );
}

/** Every form a value may take on the way out: itself, percent-encoded, base64 (Basic auth), JSON-escaped. */
export function encodings(value: string): string[] {
  return [
    ...new Set([
      value,
      encodeURIComponent(value),
      Buffer.from(value).toString('base64'),
      JSON.stringify(value).slice(1, -1),
    ]),
  ];
}

/** The exhibits that contain any of the needles, with which one. */
export function findLeaks(exhibits: Exhibit[], needles: string[]): Array<{ where: string; needle: string }> {
  const hits: Array<{ where: string; needle: string }> = [];
  for (const e of exhibits) {
    for (const needle of needles) if (e.text.includes(needle)) hits.push({ where: e.where, needle });
  }
  return hits;
}
