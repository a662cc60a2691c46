import { describe, expect, it } from 'vitest';
import { managedSpec } from '../testing/proxy-fixtures.js';
import type { ManagedSpec } from './proxy.js';
import { canonicalJson, fnv1a64, specHash } from './spec-hash.js';

const base = managedSpec() as ManagedSpec;
const hashOf = (over: Record<string, unknown>, digest = 'd1') =>
  specHash(managedSpec(over) as ManagedSpec, digest);

describe('specHash', () => {
  it('is stable: same spec and cloud-init, same 16-hex-digit hash (a valid label value)', () => {
    expect(specHash(base, 'd1')).toBe(specHash(managedSpec() as ManagedSpec, 'd1'));
    expect(specHash(base, 'd1')).toMatch(/^[0-9a-f]{16}$/);
  });

  it.each([
    ['zone', { zone: 'europe-west1-b' }],
    ['machine type', { machineType: 'e2-medium' }],
    ['image', { image: 'projects/p/global/images/i' }],
    ['port', { port: 8080 }],
    // The API refuses a managed socks5 spec (managed-protocol.ts); the hash would still tell them apart.
    ['protocol', { protocol: 'socks5' }],
    ['credentials', { credentialsRef: { secret: 'creds' } }],
  ])('changes with the %s', (_f, over) => {
    expect(hashOf(over)).not.toBe(specHash(base, 'd1'));
  });

  it('changes with the resolved cloud-init (a rotated secret replaces the instance)', () => {
    expect(specHash(base, 'd2')).not.toBe(specHash(base, 'd1'));
  });

  it.each([
    ['capacity', { capacity: 9 }],
    ['attributes', { attributes: { region: 'eu' } }],
    ['health check', { healthCheck: { url: 'http://example.com/' } }],
    ['gateway pool', { gatewayPool: true }],
    // Cordoning keeps the VM (docs/leases.md § Cordon): it must never read as a changed instance shape.
    ['cordon', { cordoned: true }],
    ['uncordon', { cordoned: false }],
  ])('ignores the %s (never replace a VM for a lease setting)', (_f, over) => {
    expect(hashOf(over)).toBe(specHash(base, 'd1'));
  });
});

describe('canonicalJson / fnv1a64', () => {
  it('orders keys, drops undefined, renders dates as ISO strings', () => {
    expect(canonicalJson({ b: 1, a: { d: undefined, c: [2, null] } })).toBe('{"a":{"c":[2,null]},"b":1}');
    expect(canonicalJson({ at: new Date('2026-01-01T00:00:00Z') })).toBe('{"at":"2026-01-01T00:00:00.000Z"}');
  });

  it('matches the FNV-1a 64 reference vectors', () => {
    expect(fnv1a64('')).toBe('cbf29ce484222325');
    expect(fnv1a64('a')).toBe('af63dc4c8601ec8c');
  });
});
