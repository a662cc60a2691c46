// Versioning and delta-or-full (contract §3). A worker's version rises by one for every change of content;
// a delta names its baseVersion and carries the checksum of the resulting full snapshot. A delta is sent
// only when the worker can hold its base — the base was built for the worker's current session — and it
// is at most half the size of the full snapshot; otherwise the full snapshot goes (a delta that moves most
// proxies saves nothing and costs the worker a second validation path).
import type { GatewayDelta, GatewaySnapshot } from '../../messages/gateway-snapshot.js';
import type { Sha256Hex } from '../gateway/canonical.js';
import { buildPrepared, deltaPrepared, type Prepared } from './canonical-fast.js';

export interface StoredHeader {
  version: number;
  contentDigest: string;
  /** The worker session the stored snapshot was built for. */
  sessionId: string | null;
}

export type VersionStep = { kind: 'unchanged' } | { kind: 'changed'; full: GatewaySnapshot };

export function nextVersion(
  stored: StoredHeader | null,
  prepared: Prepared,
  digest: string,
  sessionId: string,
  sha256: Sha256Hex,
): VersionStep {
  // A new session starts from nothing: it gets a fresh version even when the content is the same.
  if (stored && stored.contentDigest === digest && stored.sessionId === sessionId)
    return { kind: 'unchanged' };
  return { kind: 'changed', full: buildPrepared(prepared, (stored?.version ?? 0) + 1, sha256) };
}

export type SnapshotMessage =
  | { kind: 'full'; message: GatewaySnapshot; bytes: number }
  | { kind: 'delta'; message: GatewayDelta; bytes: number; fullBytes: number };

const utf8 = new TextEncoder();
export const jsonBytes = (v: unknown): number => utf8.encode(JSON.stringify(v)).length;

/** The size of a full snapshot's JSON, from its fragments (canonical text and JSON differ by a few keys). */
const approxFullBytes = (p: Prepared) =>
  p.fragments.reduce((n, f) => n + f.length + 1, 400 + p.routingText.length);

/** `base` is the previous full snapshot (prepared) when it was built for the same session, else null. */
export function chooseMessage(
  base: { version: number; prepared: Prepared } | null,
  next: GatewaySnapshot,
  nextP: Prepared,
): SnapshotMessage {
  const full = (): SnapshotMessage => ({ kind: 'full', message: next, bytes: approxFullBytes(nextP) });
  if (!base || base.prepared.content.workerId !== next.workerId || base.version >= next.version)
    return full();
  const delta = deltaPrepared(base.prepared, base.version, next, nextP);
  // Most entries changed (a renewed grant moves every expiry): the full snapshot, without sizing the delta.
  if ((delta.upserts.length + delta.removals.length) * 2 > next.proxies.length + 1) return full();
  const bytes = jsonBytes(delta);
  const fullBytes = approxFullBytes(nextP);
  return bytes * 2 <= fullBytes ? { kind: 'delta', message: delta, bytes, fullBytes } : full();
}
