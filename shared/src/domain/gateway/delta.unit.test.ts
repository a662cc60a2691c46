import { describe, expect, it } from 'vitest';
import {
  GatewayDelta,
  type GatewayProxy,
  GatewaySnapshot,
  type GatewaySnapshotContent,
  sha256Hex,
} from '../../messages/gateway-snapshot.js';
import { decideSnapshot } from './acceptance.js';
import { buildSnapshot, canonicalize, snapshotChecksum } from './canonical.js';
import { applyDelta, buildDelta } from './delta.js';

const proxy = (name: string, extra: Partial<GatewayProxy> = {}): GatewayProxy => ({
  name,
  host: '10.0.0.1',
  port: 3128,
  protocol: 'http',
  capacity: 4,
  expiresAt: '2026-01-01T01:00:00.000Z',
  usableUntil: '2026-01-01T00:59:00.000Z',
  attributes: { region: 'eu' },
  ...extra,
});

const content = (version: number, proxies: GatewayProxy[], epoch = 1): GatewaySnapshotContent => ({
  schemaVersion: 1,
  version,
  ownershipEpoch: epoch,
  workerId: 'w1',
  generatedAt: '2026-01-01T00:00:00.000Z',
  validUntil: '2026-01-01T00:10:00.000Z',
  routing: [{ name: 'all', match: { hosts: ['*'] }, selector: {}, policy: 'least-active' }],
  proxies,
});

const v1 = buildSnapshot(content(1, [proxy('b'), proxy('a'), proxy('c')]), sha256Hex);

describe('canonical checksum', () => {
  it('ignores proxy order, key order and timestamp spelling', () => {
    const shuffled = content(1, [proxy('c'), proxy('a'), proxy('b')]);
    const respelled = { ...shuffled, generatedAt: '2026-01-01T00:00:00Z' };
    expect(snapshotChecksum(respelled, sha256Hex)).toBe(v1.checksum);
  });

  it('writes defaulted fields out, so an unparsed object hashes like its parsed form', () => {
    const raw = { ...content(1, [proxy('a', { credentialsRef: { secret: 's' } as never })]) };
    const parsed = GatewaySnapshot.parse({ kind: 'full', ...raw, checksum: '0'.repeat(64) });
    expect(snapshotChecksum(raw, sha256Hex)).toBe(snapshotChecksum(parsed, sha256Hex));
    expect(canonicalize(parsed)).toContain('"credentialsRef":{"secret":"s","version":"latest"}');
  });

  it.each([
    [
      'routing order',
      (c: GatewaySnapshotContent) => ({ ...c, routing: [...c.routing, { ...c.routing[0]!, name: 'z' }] }),
    ],
    [
      'a capacity',
      (c: GatewaySnapshotContent) => ({ ...c, proxies: c.proxies.map((p) => ({ ...p, capacity: 5 })) }),
    ],
    ['the epoch', (c: GatewaySnapshotContent) => ({ ...c, ownershipEpoch: 2 })],
    [
      'filtersDestinations: true',
      (c: GatewaySnapshotContent) => ({
        ...c,
        proxies: c.proxies.map((p) => ({ ...p, filtersDestinations: true })),
      }),
    ],
  ])('changes with %s', (_label, change) => {
    expect(snapshotChecksum(change(v1), sha256Hex)).not.toBe(v1.checksum);
  });

  it('filtersDestinations false or absent hashes as before the field existed (old snapshots still verify)', () => {
    const off = { ...v1, proxies: v1.proxies.map((p) => ({ ...p, filtersDestinations: false })) };
    expect(snapshotChecksum(off, sha256Hex)).toBe(v1.checksum);
    expect(canonicalize(v1)).not.toContain('filtersDestinations');
    const on = { ...v1, proxies: v1.proxies.map((p) => ({ ...p, filtersDestinations: true })) };
    expect(canonicalize(on)).toContain('"filtersDestinations":true');
    // An old snapshot (no field) parses, and the field is validated when present.
    expect(GatewaySnapshot.safeParse(v1).success).toBe(true);
    expect(GatewaySnapshot.safeParse(on).success).toBe(true);
    const bad = { ...v1, proxies: v1.proxies.map((p) => ({ ...p, filtersDestinations: 'yes' })) };
    expect(GatewaySnapshot.safeParse(bad).success).toBe(false);
  });

  it('is the sha256 of the canonical text', () => {
    expect(v1.checksum).toBe(sha256Hex(canonicalize(v1)));
    expect(v1.proxies.map((p) => p.name)).toEqual(['a', 'b', 'c']);
  });
});

describe('applyDelta', () => {
  const v2 = buildSnapshot(
    content(2, [proxy('a', { capacity: 9 }), proxy('c'), proxy('d', { attributes: { region: 'us' } })]),
    sha256Hex,
  );
  const delta = buildDelta(v1, v2, sha256Hex);

  it('builds a minimal delta that passes its own schema', () => {
    expect(GatewayDelta.parse(delta)).toBeTruthy();
    expect(delta.upserts.map((p) => p.name)).toEqual(['a', 'd']);
    expect(delta.removals).toEqual(['b']);
    expect(delta.routing).toBeUndefined();
  });

  it('gives exactly the controller’s snapshot on the right base', () => {
    const r = applyDelta(v1, delta, sha256Hex);
    expect(r).toEqual({ ok: true, snapshot: v2 });
  });

  it.each([
    ['base version differs', { ...delta, baseVersion: 7 }, 'base_mismatch'],
    ['another worker', { ...delta, workerId: 'w2' }, 'base_mismatch'],
    ['checksum of something else', { ...delta, checksum: v1.checksum }, 'checksum_mismatch'],
    ['an upsert lost in transit', { ...delta, upserts: delta.upserts.slice(1) }, 'checksum_mismatch'],
    ['a removal too many', { ...delta, removals: ['b', 'c'] }, 'checksum_mismatch'],
  ])('rejects: %s', (_label, d, reject) => {
    expect(applyDelta(v1, d, sha256Hex)).toEqual({ ok: false, reject });
  });

  it('carries routing only when it changed, and applies it', () => {
    const v3 = buildSnapshot(
      {
        ...content(3, v2.proxies),
        routing: [{ name: 'eu', match: { hosts: ['*.eu'] }, selector: {}, policy: 'round-robin' }],
      },
      sha256Hex,
    );
    const d = buildDelta(v2, v3, sha256Hex);
    expect(d.routing).toEqual(v3.routing);
    expect(applyDelta(v2, d, sha256Hex)).toEqual({ ok: true, snapshot: v3 });
  });

  it('the schema refuses a proxy both upserted and removed', () => {
    expect(GatewayDelta.safeParse({ ...delta, removals: ['a'] }).success).toBe(false);
  });
});

describe('decideSnapshot', () => {
  const ctx = { workerId: 'w1', sha256: sha256Hex };
  const at = (version: number, epoch: number) => ({ version, ownershipEpoch: epoch, checksum: 'x' });
  const v5e2 = buildSnapshot(content(5, [proxy('a')], 2), sha256Hex);

  it.each([
    ['nothing yet', null, { action: 'apply' }],
    ['an older version', at(4, 2), { action: 'apply' }],
    ['the same version and content', { ...at(5, 2), checksum: v5e2.checksum }, { action: 'duplicate' }],
    ['the same version, other content', at(5, 2), { action: 'reject', reason: 'version_conflict' }],
    ['a newer version', at(6, 2), { action: 'reject', reason: 'stale_version' }],
    ['a higher epoch', at(1, 3), { action: 'reject', reason: 'stale_epoch' }],
    ['a lower epoch with a higher version', at(9, 1), { action: 'apply' }],
  ])('against %s', (_label, current, decision) => {
    expect(decideSnapshot(current, v5e2, ctx)).toEqual(decision);
  });

  it('hashes only what it could apply: a duplicate or an older snapshot is decided by version and epoch', () => {
    let hashed = 0;
    const sha256 = (s: string) => {
      hashed++;
      return sha256Hex(s);
    };
    const counting = { ...ctx, sha256 };
    expect(decideSnapshot({ ...at(5, 2), checksum: v5e2.checksum }, v5e2, counting)).toEqual({
      action: 'duplicate',
    });
    expect(decideSnapshot(at(6, 2), v5e2, counting).action).toBe('reject');
    expect(decideSnapshot(at(1, 3), v5e2, counting).action).toBe('reject');
    expect(hashed).toBe(0);
    // A version conflict is checked: a message corrupted in transit is said so, not called a conflict.
    expect(decideSnapshot(at(5, 2), { ...v5e2, proxies: [] }, counting)).toEqual({
      action: 'reject',
      reason: 'checksum_mismatch',
    });
    expect(decideSnapshot(null, v5e2, counting)).toEqual({ action: 'apply' });
    expect(hashed).toBe(2);
  });

  it('refuses another worker’s snapshot and a forged checksum', () => {
    expect(decideSnapshot(null, v5e2, { ...ctx, workerId: 'w9' })).toEqual({
      action: 'reject',
      reason: 'wrong_worker',
    });
    expect(decideSnapshot(null, { ...v5e2, version: 6 }, ctx)).toEqual({
      action: 'reject',
      reason: 'checksum_mismatch',
    });
  });
});

describe('schema', () => {
  const wire = { ...v1 };
  it.each([
    ['an unknown policy', { ...wire, routing: [{ ...wire.routing[0], policy: 'random' }] }],
    ['an unknown protocol', { ...wire, proxies: [{ ...wire.proxies[0], protocol: 'socks4' }] }],
    ['an unknown field', { ...wire, extra: 1 }],
    ['another schema version', { ...wire, schemaVersion: 2 }],
    [
      'usableUntil after expiresAt',
      { ...wire, proxies: [{ ...wire.proxies[0], usableUntil: '2026-01-01T02:00:00Z' }] },
    ],
    ['sticky without a key', { ...wire, routing: [{ ...wire.routing[0], policy: 'sticky' }] }],
    ['duplicate proxy names', { ...wire, proxies: [wire.proxies[0], wire.proxies[0]] }],
  ])('rejects %s', (_label, message) => {
    expect(GatewaySnapshot.safeParse(message).success).toBe(false);
  });

  it('accepts what buildSnapshot produces', () => {
    expect(GatewaySnapshot.parse(v1)).toEqual(v1);
  });

  it('accepts a socks5 entry (protocol 4: written only for workers that read it)', () => {
    const socks = { ...wire, proxies: [{ ...wire.proxies[0], protocol: 'socks5' }] };
    expect(GatewaySnapshot.parse(socks).proxies[0]?.protocol).toBe('socks5');
  });
});
