// The largest workers/{id} document the worker API can write must fit Firestore's 1 MiB per document, with
// margin: a report the limits accept but the store refuses fails on every retry (the worker's capacity
// falls to 0). Sized by Firestore's storage rules (firebase.google.com/docs/firestore/storage-size):
// string = UTF-8 bytes + 1, integer / Timestamp = 8, boolean / null = 1, map = Σ (key + 1 + value),
// array = Σ values, document = name + fields + 32.
import { Timestamp } from '@google-cloud/firestore';
import { describe, expect, it } from 'vitest';
import { BOUND_FROM_KEPT } from '../../domain/workers/session.js';
import { WORKER_LIMITS } from '../../messages/worker-api.js';
import { readWorkerDoc, workerToFirestore } from './worker-converter.js';

const MIB = 1024 * 1024;
const utf8 = (s: string) => Buffer.byteLength(s, 'utf8');

function size(v: unknown): number {
  if (v === null || typeof v === 'boolean') return 1;
  if (typeof v === 'number' || v instanceof Timestamp) return 8;
  if (typeof v === 'string') return utf8(v) + 1;
  if (Array.isArray(v)) return v.reduce((n: number, x) => n + size(x), 0);
  return Object.entries(v as object).reduce((n, [k, x]) => n + utf8(k) + 1 + size(x), 0);
}
const docSize = (path: string, data: object) =>
  path.split('/').reduce((n, seg) => n + utf8(seg) + 1, 0) + 16 + size(data) + 32;

const long = (n: number, fill: string) => fill.repeat(n);
const name63 = (i: number) => `p${String(i).padStart(62, '0')}`;

function worstCase() {
  const id = long(128, 'w');
  const at = new Date('2026-11-30T10:00:00Z');
  return {
    session: {
      workerId: id,
      instanceId: long(128, 'i'),
      sessionId: long(64, 's'),
      zone: long(63, 'z'),
      protocolVersion: 2,
      principal: long(320, 'e'),
      registeredAt: at,
      validUntil: at,
      ackedVersion: Number.MAX_SAFE_INTEGER,
      ackedEpoch: Number.MAX_SAFE_INTEGER,
      ackedChecksum: long(64, 'c'),
      boundFrom: Array.from({ length: BOUND_FROM_KEPT }, (_, i) => long(64, String(i))),
      lastReportSequence: Number.MAX_SAFE_INTEGER,
      lastReportDigest: long(64, 'd'),
      outcomeSequence: Number.MAX_SAFE_INTEGER,
    },
    report: {
      workerId: id,
      sessionId: long(64, 's'),
      epoch: Number.MAX_SAFE_INTEGER,
      receivedAt: at,
      draining: true,
      counts: Array.from({ length: WORKER_LIMITS.maxCounts }, (_, i) => ({
        proxy: name63(i),
        active: 1_000_000,
        reserved: 1_000_000,
      })),
    },
  };
}

describe('workers/{id} size', () => {
  it('the worst case the limits allow (maxCounts entries, 63-character names) fits 1 MiB with ≥ 15 % margin', () => {
    const record = worstCase();
    const bytes = docSize(`workers/${record.session.workerId}`, workerToFirestore(record));
    expect(bytes).toBeLessThan(0.85 * MIB);
  });

  it('round-trips the worst case', () => {
    const record = worstCase();
    expect(readWorkerDoc(workerToFirestore(record))).toEqual({ record });
  });

  it('lists a boundFrom that is no list of session ids as a field that does not fit, never its value', () => {
    const doc = { ...workerToFirestore(worstCase()), boundFrom: 'sess-1' };
    expect(readWorkerDoc(doc)).toEqual({ fields: ['boundFrom'] });
  });

  it('reads a document written before boundFrom (or with it null) as taking no bound from another session', () => {
    const record = worstCase();
    const { boundFrom: _none, ...older } = workerToFirestore(record);
    for (const doc of [older, { ...older, boundFrom: null }]) {
      const read = readWorkerDoc(doc);
      expect(read).toHaveProperty('record');
      expect('record' in read && (read.record.session.boundFrom ?? null)).toBeNull();
    }
  });
});
