// The seed's spec-hash annotation (spechash.go), kept as `status.specHash`: the hash of what an instance
// is built from. reconcileManaged compares it with the hash of the current spec to decide create / adopt /
// replace (seed §3). Only fields that shape the instance count: editing capacity, attributes or the
// health check must never replace a VM. The cloud-init enters as the digest of the resolved script, so a
// rotated Secret Manager version replaces the instance while the spec itself is untouched (seed §1).
import type { ManagedSpec } from './proxy.js';

/** JSON with object keys sorted at every level and undefined members dropped: equal values, equal text. */
export function canonicalJson(value: unknown): string {
  if (value instanceof Date) return JSON.stringify(value.toISOString());
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
}

const FNV64_OFFSET = 0xcbf29ce484222325n;
const FNV64_PRIME = 0x100000001b3n;
const MASK64 = 0xffffffffffffffffn;

/**
 * FNV-1a, 64 bits, over the UTF-8 bytes. A change detector for one proxy's successive specs, not a
 * security boundary: secret content never reaches it (only the resolver's SHA-256 digest does).
 */
export function fnv1a64(text: string): string {
  let h = FNV64_OFFSET;
  for (const byte of new TextEncoder().encode(text)) {
    h ^= BigInt(byte);
    h = (h * FNV64_PRIME) & MASK64;
  }
  return h.toString(16).padStart(16, '0');
}

/** The fields of a managed spec an instance is built from (buildInsertRequest reads exactly these). */
export function instanceShape(spec: ManagedSpec, cloudInitDigest: string): Record<string, unknown> {
  return {
    provider: spec.provider,
    zone: spec.zone,
    machineType: spec.machineType,
    image: spec.image,
    port: spec.port,
    protocol: spec.protocol,
    credentialsRef: spec.credentialsRef ?? null,
    cloudInit: cloudInitDigest,
  };
}

/** 16 hex digits; also a valid GCE label value, so the instance can carry it (label proxyplane-spec-hash). */
export const specHash = (spec: ManagedSpec, cloudInitDigest: string): string =>
  fnv1a64(canonicalJson(instanceShape(spec, cloudInitDigest)));
