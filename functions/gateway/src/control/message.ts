// One Pub/Sub message of the worker's subscription, decided before anything is applied: addressed to
// another worker (the emulator delivers everything: recipes §10), poison (not JSON, not the wire schema,
// attributes contradicting the payload), or a snapshot / delta for us. Attributes are checked first so a
// foreign multi-megabyte snapshot is never parsed.
//
// The wire schema runs in slices (shared slices.ts): the message with its proxy list emptied, then the
// entries one by one with GatewayProxy, yielding every SLICE_ITEMS, then the list's own rules (length,
// unique names, a delta's upserts against its removals). Same schema, same verdict as
// GatewaySnapshotMessage in one piece (message.unit.test.ts holds the two to each other); its ~55 ms for
// 10,000 proxies (`npm run bench -- snapshot`) no longer holds up the requests on this thread.
import { drain, SLICE_ITEMS, type Sliced } from '../../../../shared/src/domain/gateway/slices.js';
import {
  GatewayProxy,
  GatewaySnapshotMessage,
  MAX_SNAPSHOT_PROXIES,
  PROXY_NAMES_UNIQUE,
  UPSERTED_AND_REMOVED,
  UPSERTED_NAMES_UNIQUE,
  uniqueNames,
  upsertedAndRemoved,
} from '../../../../shared/src/messages/gateway-snapshot.js';
import type { FeedMessage } from './feed.js';

export type DecodedMessage =
  | { kind: 'foreign' }
  | { kind: 'poison'; reason: string }
  | { kind: 'snapshot'; message: GatewaySnapshotMessage };

type Checked = { ok: true; message: GatewaySnapshotMessage } | { ok: false; reason: string };

export function decodeSnapshotMessage(m: FeedMessage, workerId: string): DecodedMessage {
  return drain(decodeSnapshotSlices(m, workerId));
}

export function* decodeSnapshotSlices(m: FeedMessage, workerId: string): Sliced<DecodedMessage> {
  if (m.attributes.workerId !== workerId) return { kind: 'foreign' };
  let json: unknown;
  try {
    json = JSON.parse(m.data.toString('utf8'));
  } catch {
    return { kind: 'poison', reason: 'not JSON' };
  }
  const checked = yield* checkSnapshotSlices(json);
  if (!checked.ok) return { kind: 'poison', reason: checked.reason };
  const message = checked.message;
  if (message.workerId !== workerId) return { kind: 'poison', reason: 'payload addressed to another worker' };
  const a = m.attributes;
  const mismatch =
    (a.kind !== undefined && a.kind !== message.kind) ||
    (a.version !== undefined && a.version !== String(message.version)) ||
    (a.checksum !== undefined && a.checksum !== message.checksum);
  if (mismatch) return { kind: 'poison', reason: 'attributes contradict the payload' };
  return { kind: 'snapshot', message };
}

const schemaReason = (
  issue: { path: PropertyKey[]; message: string } | undefined,
  prefix: PropertyKey[] = [],
) =>
  `schema: ${issue ? [...prefix, ...issue.path].map(String).join('.') : ''} ${issue?.message ?? ''}`.trim();

/** The list a message's kind carries its entries in, when it is one the sliced check can take. */
function entriesOf(json: unknown): { key: 'proxies' | 'upserts'; items: unknown[] } | null {
  if (typeof json !== 'object' || json === null || Array.isArray(json)) return null;
  const o = json as Record<string, unknown>;
  const key = o.kind === 'full' ? 'proxies' : o.kind === 'delta' ? 'upserts' : null;
  if (!key || !Array.isArray(o[key])) return null;
  const items = o[key] as unknown[];
  return items.length <= MAX_SNAPSHOT_PROXIES ? { key, items } : null;
}

/** GatewaySnapshotMessage.safeParse(json), in slices: a pulled message's payload, or a fetched snapshot. */
export function* checkSnapshotSlices(json: unknown): Sliced<Checked> {
  const entries = entriesOf(json);
  if (!entries) {
    // Not the shape of a snapshot or a delta with a list it may carry: the schema in one piece says why
    // (small, or refused anyway).
    const whole = GatewaySnapshotMessage.safeParse(json);
    return whole.success
      ? { ok: true, message: whole.data }
      : { ok: false, reason: schemaReason(whole.error.issues[0]) };
  }
  const { key, items } = entries;
  const shell = GatewaySnapshotMessage.safeParse({ ...(json as object), [key]: [] });
  if (!shell.success) return { ok: false, reason: schemaReason(shell.error.issues[0]) };
  const parsed: GatewayProxy[] = new Array(items.length);
  for (let i = 0; i < items.length; i++) {
    const entry = GatewayProxy.safeParse(items[i]);
    if (!entry.success) return { ok: false, reason: schemaReason(entry.error.issues[0], [key, i]) };
    parsed[i] = entry.data;
    if (i % SLICE_ITEMS === SLICE_ITEMS - 1) yield;
  }
  if (!uniqueNames(parsed)) {
    return {
      ok: false,
      reason: `schema: ${key} ${key === 'proxies' ? PROXY_NAMES_UNIQUE : UPSERTED_NAMES_UNIQUE}`,
    };
  }
  const message = { ...shell.data, [key]: parsed } as GatewaySnapshotMessage;
  if (message.kind === 'delta' && upsertedAndRemoved(message)) {
    return { ok: false, reason: `schema: ${UPSERTED_AND_REMOVED}` };
  }
  return { ok: true, message };
}
