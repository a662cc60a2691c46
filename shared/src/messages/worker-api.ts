// The HTTP bodies of the worker endpoints (contract §2, §5; docs/gateway-control-plane.md), shared by the
// API that validates them and by any worker or test client that builds them. Strict: an unknown field is a
// 400 (a new field means a new protocol version, contract §7). Enum-like strings a newer worker may extend
// (an outcome's stage) are accepted as strings and mapped to UNSPECIFIED by the domain, never guessed.
import { z } from 'zod';
import { ProxyName } from '../domain/proxy.js';
import { WorkerId } from './gateway-snapshot.js';

const MAX_SAFE = Number.MAX_SAFE_INTEGER;
export const SessionId = z.string().regex(/^[A-Za-z0-9-]{8,64}$/, 'a session id');
const Sequence = z.number().int().min(0).max(MAX_SAFE);
const Version = z.number().int().min(1).max(MAX_SAFE);
const Epoch = z.number().int().min(0).max(MAX_SAFE);
const Checksum = z.string().regex(/^[0-9a-f]{64}$/, 'sha256 hex');
const Count = z.number().int().min(0).max(1_000_000);

// maxCounts is what one workers/{id} document and one 1 MiB body can hold in the worst case the schema
// allows (63-character names, counts of 1,000,000): Firestore sizes an entry {proxy, active, reserved}
// at 6+64 + 7+8 + 9+8 = 102 bytes (firebase.google.com/docs/firestore/storage-size), so 8,000 entries are
// ~816 KB of the 1 MiB document, and on the wire ~112 bytes each, ~896 KB of the body limit. 20,000 made
// a report of 14-character names unstorable (> 1 MiB), refused on every retry.
export const WORKER_LIMITS = { maxCounts: 8_000, maxOutcomes: 2_000 } as const;

export const RegisterRequestBody = z
  .object({
    workerId: WorkerId,
    instanceId: z
      .string()
      .min(1)
      .max(128)
      .regex(/^[A-Za-z0-9][-_.A-Za-z0-9]*$/, 'an instance id'),
    zone: z
      .string()
      .min(1)
      .max(63)
      .regex(/^[a-z0-9][-a-z0-9]*$/, 'a zone name'),
    supportedProtocolVersion: z.number().int().min(0).max(1_000_000),
  })
  .strict();
export type RegisterRequestBody = z.infer<typeof RegisterRequestBody>;

export const RegisterResponseBody = z.object({
  protocolVersion: z.number().int(),
  sessionId: SessionId,
  resumed: z.boolean(),
  ownershipEpoch: Epoch,
  maxStaleAgeSeconds: z.number().int().positive(),
  snapshotSubscription: z.string().min(1),
  reportIntervalSeconds: z.number().int().positive(),
  reportTtlSeconds: z.number().int().positive(),
  sessionTtlSeconds: z.number().int().positive(),
  limits: z.object({ maxCounts: z.number().int(), maxOutcomes: z.number().int() }),
});
export type RegisterResponseBody = z.infer<typeof RegisterResponseBody>;

export const AckRequestBody = z
  .object({ sessionId: SessionId, version: Version, epoch: Epoch, checksum: Checksum })
  .strict();
export type AckRequestBody = z.infer<typeof AckRequestBody>;

export const AckResponseBody = z.object({
  acceptedVersion: Version,
  acceptedEpoch: Epoch,
  unchanged: z.boolean(),
});
export type AckResponseBody = z.infer<typeof AckResponseBody>;

export const ProxyCountsEntry = z.object({ proxy: ProxyName, active: Count, reserved: Count }).strict();

export const RuntimeRequestBody = z
  .object({
    sessionId: SessionId,
    reportSequence: Sequence,
    /** The ACK bound's version; 0 = none yet (only a worker's last, idle report: domain/workers/runtime-report.ts). */
    snapshotVersion: Sequence,
    epoch: Epoch,
    draining: z.boolean(),
    /** Informational only: ordering and TTL use the controller's clock (contract §2). */
    observedAt: z.iso.datetime({ offset: true }).optional(),
    counts: z.array(ProxyCountsEntry).max(WORKER_LIMITS.maxCounts),
  })
  .strict();
export type RuntimeRequestBody = z.infer<typeof RuntimeRequestBody>;

export const RuntimeResponseBody = z.object({
  acceptedSequence: Sequence,
  replay: z.boolean(),
  revokeProxyIds: z.array(z.string()),
  reportTtlSeconds: z.number().int().positive(),
});
export type RuntimeResponseBody = z.infer<typeof RuntimeResponseBody>;

export const ReportedOutcomeEntry = z
  .object({
    proxy: ProxyName,
    /** DIAL | PROXY_HANDSHAKE | RESPONSE_HEADERS | TUNNEL; anything else is UNSPECIFIED (ignored). */
    stage: z
      .string()
      .min(1)
      .max(32)
      .regex(/^[A-Z][A-Z0-9_]*$/, 'an upper-case stage name'),
    ok: z.boolean(),
    latencyMs: z.number().min(0).max(3_600_000),
    target: z.string().max(300),
    status: z.number().int().min(0).max(999).optional(),
    at: z.iso.datetime({ offset: true }).optional(),
  })
  .strict();

export const OutcomesRequestBody = z
  .object({
    sessionId: SessionId,
    sequence: z.number().int().min(1).max(MAX_SAFE),
    outcomes: z.array(ReportedOutcomeEntry).max(WORKER_LIMITS.maxOutcomes),
  })
  .strict();
export type OutcomesRequestBody = z.infer<typeof OutcomesRequestBody>;

export const OutcomesResponseBody = z.object({
  acceptedSequence: Sequence,
  duplicate: z.boolean(),
  recorded: z.number().int(),
  ignored: z.number().int(),
});
export type OutcomesResponseBody = z.infer<typeof OutcomesResponseBody>;
