// One Pub/Sub message of the worker's subscription, decided before anything is applied: addressed to
// another worker (the emulator delivers everything: recipes §10), poison (not JSON, not the wire schema,
// attributes contradicting the payload), or a snapshot / delta for us. Attributes are checked first so a
// foreign multi-megabyte snapshot is never parsed.
import { GatewaySnapshotMessage } from '../../../../shared/src/messages/gateway-snapshot.js';
import type { FeedMessage } from './feed.js';

export type DecodedMessage =
  | { kind: 'foreign' }
  | { kind: 'poison'; reason: string }
  | { kind: 'snapshot'; message: GatewaySnapshotMessage };

export function decodeSnapshotMessage(m: FeedMessage, workerId: string): DecodedMessage {
  if (m.attributes.workerId !== workerId) return { kind: 'foreign' };
  let json: unknown;
  try {
    json = JSON.parse(m.data.toString('utf8'));
  } catch {
    return { kind: 'poison', reason: 'not JSON' };
  }
  const parsed = GatewaySnapshotMessage.safeParse(json);
  if (!parsed.success) {
    const first = parsed.error.issues[0];
    return {
      kind: 'poison',
      reason: `schema: ${first?.path.join('.') ?? ''} ${first?.message ?? ''}`.trim(),
    };
  }
  const message = parsed.data;
  if (message.workerId !== workerId) return { kind: 'poison', reason: 'payload addressed to another worker' };
  const a = m.attributes;
  const mismatch =
    (a.kind !== undefined && a.kind !== message.kind) ||
    (a.version !== undefined && a.version !== String(message.version)) ||
    (a.checksum !== undefined && a.checksum !== message.checksum);
  if (mismatch) return { kind: 'poison', reason: 'attributes contradict the payload' };
  return { kind: 'snapshot', message };
}
