// Versioning and delta-or-full (contract §3). A worker's version rises by one for every change of content;
// a delta names its baseVersion and carries the checksum of the resulting full snapshot. A delta is sent
// only when the worker can hold its base — the base was built for the worker's current session — and it
// is at most half the size of the full snapshot; otherwise the full snapshot goes (a delta that moves most
// proxies saves nothing and costs the worker a second validation path).
import type {
  GatewayDelta,
  GatewaySnapshot,
  GatewaySnapshotContent,
} from '../../messages/gateway-snapshot.js';
import { buildSnapshot, type Sha256Hex } from '../gateway/canonical.js';
import { buildDelta } from '../gateway/delta.js';

export interface StoredHeader {
  version: number;
  contentDigest: string;
  /** The worker session the stored snapshot was built for. */
  sessionId: string | null;
}

export type VersionStep = { kind: 'unchanged' } | { kind: 'changed'; full: GatewaySnapshot };

export function nextVersion(
  stored: StoredHeader | null,
  content: GatewaySnapshotContent,
  digest: string,
  sessionId: string,
  sha256: Sha256Hex,
): VersionStep {
  // A new session starts from nothing: it gets a fresh version even when the content is the same.
  if (stored && stored.contentDigest === digest && stored.sessionId === sessionId)
    return { kind: 'unchanged' };
  const version = (stored?.version ?? 0) + 1;
  return { kind: 'changed', full: buildSnapshot({ ...content, version }, sha256) };
}

export type SnapshotMessage =
  | { kind: 'full'; message: GatewaySnapshot; bytes: number }
  | { kind: 'delta'; message: GatewayDelta; bytes: number; fullBytes: number };

const utf8 = new TextEncoder();
export const jsonBytes = (v: unknown): number => utf8.encode(JSON.stringify(v)).length;

/** `base` is the previous full snapshot when it was built for the same session, else null. */
export function chooseMessage(
  base: GatewaySnapshot | null,
  next: GatewaySnapshot,
  sha256: Sha256Hex,
): SnapshotMessage {
  const fullBytes = jsonBytes(next);
  if (!base || base.workerId !== next.workerId || base.version >= next.version) {
    return { kind: 'full', message: next, bytes: fullBytes };
  }
  const delta = buildDelta(base, next, sha256);
  const bytes = jsonBytes(delta);
  return bytes * 2 <= fullBytes
    ? { kind: 'delta', message: delta, bytes, fullBytes }
    : { kind: 'full', message: next, bytes: fullBytes };
}
