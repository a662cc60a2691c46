// FirestoreSnapshotStore.save against the Firestore emulator: a version is saved once. A pass that
// outlived its planner lock (or simply lost a race) must not overwrite the snapshot another pass stored
// with a different snapshot of the same — or an older — version: the store refuses with `conflict`, and
// what is stored (header and parts) stays the winner's.
import { FieldValue, Firestore, Timestamp } from '@google-cloud/firestore';
import { afterAll, describe, expect, it } from 'vitest';
import { FirestoreSnapshotStore, PART_SIZE } from '../../shared/src/adapters/firestore/snapshot-store.js';
import { DEFAULT_ROUTING } from '../../shared/src/domain/snapshots/content.js';
import {
  GATEWAY_SNAPSHOT_SCHEMA_VERSION,
  type GatewayProxy,
  type GatewaySnapshot,
} from '../../shared/src/messages/gateway-snapshot.js';
import { WorkerStoreError } from '../../shared/src/ports/workers.js';
import type { SnapshotHeader } from '../../shared/src/ports/workers-snapshots.js';
import { testProjectId } from '../support/emulators.js';
import { failNextCommitAfterLanding } from '../support/replayed-commit-firestore.js';

const projectId = testProjectId();
const db = new Firestore({ projectId });
const store = new FirestoreSnapshotStore(db);
afterAll(() => db.terminate());

const t0 = Date.UTC(2026, 10, 30, 12, 0, 0);
const iso = (s: number) => new Date(t0 + s * 1000).toISOString();
const proxy = (i: number): GatewayProxy => ({
  name: `p-${i}`,
  host: `10.0.${Math.floor(i / 250)}.${(i % 250) + 1}`,
  port: 3128,
  protocol: 'http',
  capacity: 8,
  expiresAt: iso(180),
  usableUntil: iso(170),
  attributes: {},
});

/** A snapshot of `version` whose content (and checksum) is told apart by `tag`. */
function snapshot(workerId: string, version: number, proxies: number, tag: string) {
  const checksum = `${tag}${String(version)}`.padEnd(64, '0').replace(/[^0-9a-f]/g, 'a');
  const full: GatewaySnapshot = {
    kind: 'full',
    schemaVersion: GATEWAY_SNAPSHOT_SCHEMA_VERSION,
    version,
    ownershipEpoch: version,
    workerId,
    generatedAt: iso(0),
    validUntil: iso(180),
    routing: DEFAULT_ROUTING,
    proxies: Array.from({ length: proxies }, (_, i) => proxy(i)),
    checksum,
  };
  const header: SnapshotHeader = {
    workerId,
    version,
    ownershipEpoch: version,
    checksum,
    contentDigest: checksum,
    sessionId: 's1',
    generatedAt: new Date(t0),
    validUntil: new Date(t0 + 180_000),
    grantedUntil: new Date(t0 + 180_000),
    draining: {},
    recent: [{ version, epoch: version, checksum }],
    sentAt: null,
    proxies,
  };
  return { header, full };
}

const save = (s: ReturnType<typeof snapshot>) => store.save(s.header, s.full);
const refusal = (p: Promise<unknown>) =>
  p.then(
    () => null,
    (e: unknown) => e,
  );

describe('FirestoreSnapshotStore.save', () => {
  it('saves rising versions, with parts, and drops the parts a smaller snapshot no longer needs', async () => {
    await save(snapshot('w-a', 1, PART_SIZE + 5, 'a'));
    await save(snapshot('w-a', 2, 3, 'b'));
    const full = await store.loadFull('w-a');
    expect(full).toEqual(snapshot('w-a', 2, 3, 'b').full);
    expect((await db.collection('snapshots/w-a/parts').get()).size).toBe(1);
  });

  it('stores each entry’s instants as Timestamps and reads back the very text the checksum covers', async () => {
    const s = snapshot('w-t', 1, 2, 't');
    // Text a Timestamp would not give back as it is (no milliseconds): stays text, reads back unchanged.
    s.full.proxies[1] = { ...s.full.proxies[1]!, expiresAt: '2026-11-30T12:03:00Z' };
    await save(s);
    const [first, second] = (await db.doc('snapshots/w-t/parts/0').get()).get('proxies') as Array<
      Record<string, unknown>
    >;
    expect(first!.expiresAt).toBeInstanceOf(Timestamp);
    expect((first!.usableUntil as Timestamp).toDate().toISOString()).toBe(iso(170));
    expect(second!.expiresAt).toBe('2026-11-30T12:03:00Z');
    expect(await store.loadFull('w-t')).toEqual(s.full);
    // A part saved before (instants as text) reads as it did.
    await db.doc('snapshots/w-t/parts/0').update({ proxies: s.full.proxies });
    expect(await store.loadFull('w-t')).toEqual(s.full);
  });

  it('keeps the ACK the worker owes with the header; a header stored before it reads as none owed', async () => {
    const owed = { version: 3, since: new Date(t0 + 5_000) };
    const s = snapshot('w-owed', 4, 2, 'a');
    await store.save({ ...s.header, ackOwed: owed }, s.full);
    expect((await store.header('w-owed'))?.ackOwed).toEqual(owed);
    // A header written by a release before the field: no owed ACK (never a reason to drop the header).
    await db.doc('snapshots/w-owed').update({ ackOwed: FieldValue.delete() });
    expect((await store.header('w-owed'))?.ackOwed).toBeNull();
    expect((await store.headersInView(['w-owed'], new Date(t0))).get('w-owed')?.ackOwed).toBeNull();
  });

  it.each<[string, number]>([
    ['a different snapshot of the stored version', 2],
    ['an older version', 1],
  ])('refuses %s (conflict) and keeps what is stored', async (_n, version) => {
    const before = await store.loadFull('w-a');
    const err = await refusal(save(snapshot('w-a', version, 7, 'c')));
    expect(err).toBeInstanceOf(WorkerStoreError);
    expect(err).toHaveProperty('kind', 'conflict');
    expect(await store.loadFull('w-a')).toEqual(before);
    expect((await store.header('w-a'))?.checksum).toBe(before?.checksum);
  });

  // The client runs a transaction again when its commit's answer is lost (UNAVAILABLE, DEADLINE_EXCEEDED):
  // the second run found the version stored — by the first — and refused it as a race lost, so the pass
  // published nothing and the worker waited a tick for it.
  it.each<[string, number]>([
    ['UNAVAILABLE', 14],
    ['DEADLINE_EXCEEDED', 4],
  ])(
    'a save whose commit landed before its answer was lost (%s) is saved, not a race lost',
    async (_n, code) => {
      const flaky = new Firestore({ projectId });
      try {
        const worker = `w-landed-${code}`;
        await new FirestoreSnapshotStore(flaky).save(
          snapshot(worker, 1, 2, 'a').header,
          snapshot(worker, 1, 2, 'a').full,
        );
        const next = snapshot(worker, 2, 3, 'b');
        failNextCommitAfterLanding(flaky, code);
        await new FirestoreSnapshotStore(flaky).save(next.header, next.full);
        expect(await store.loadFull(worker)).toEqual(next.full);
        // Another snapshot of that version is still refused.
        expect(await refusal(save(snapshot(worker, 2, 3, 'c')))).toHaveProperty('kind', 'conflict');
      } finally {
        await flaky.terminate();
      }
    },
  );

  it('of two passes saving the same version at once, exactly one wins and the stored snapshot is its', async () => {
    await save(snapshot('w-b', 4, 2, 'a'));
    const contenders = [snapshot('w-b', 5, 2, 'b'), snapshot('w-b', 5, PART_SIZE + 1, 'c')];
    const outcomes = await Promise.all(contenders.map((c) => refusal(save(c))));
    expect(outcomes.filter((o) => o === null)).toHaveLength(1);
    const lost = outcomes.find((o) => o !== null);
    expect(lost).toHaveProperty('kind', 'conflict');
    const winner = contenders[outcomes.indexOf(null)]!;
    expect(await store.loadFull('w-b')).toEqual(winner.full);
  });

  it('reads again when a save lands between the header and its parts; a lasting mismatch is unavailable', async () => {
    await save(snapshot('w-c', 1, 3, 'a'));
    const v2 = snapshot('w-c', 2, 3, 'b');
    // Reads racing a save of the next version: each sees one version whole, never a mix.
    const reads = Promise.all(Array.from({ length: 20 }, () => store.loadFull('w-c')));
    await save(v2);
    for (const r of await reads) expect([1, 2]).toContain(r?.version);
    expect(await store.loadFull('w-c')).toEqual(v2.full);
    // A part of another version that stays so (damage, not a race): unavailable, named as such.
    await db.doc('snapshots/w-c/parts/0').update({ version: 1 });
    const err = await store.loadFull('w-c').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WorkerStoreError);
    expect(err).toMatchObject({ kind: 'unavailable', message: expect.stringContaining('kept changing') });
  });

  it('review: a save that drops a part between the header read and the parts read is a race too, not damage', async () => {
    // v1 has two parts; v2 (one proxy fewer than PART_SIZE + 1) has one, and its save deletes part 1.
    await save(snapshot('w-d', 1, PART_SIZE + 1, 'a'));
    const v2 = snapshot('w-d', 2, PART_SIZE, 'b');
    // The save lands exactly between loadFull's header read and its parts read (deterministic, not timed).
    let raced = false;
    const racing = new Proxy(db, {
      get(target, key) {
        if (key === 'getAll' && !raced) {
          return async (...refs: Parameters<Firestore['getAll']>) => {
            raced = true;
            await save(v2);
            return target.getAll(...refs);
          };
        }
        const v = Reflect.get(target, key) as unknown;
        return typeof v === 'function' ? v.bind(target) : v;
      },
    });
    const read = await new FirestoreSnapshotStore(racing).loadFull('w-d').catch((e: unknown) => e);
    expect(raced).toBe(true);
    // Torn by a save: read again and return v2 (today: part 1 is missing, PartDoc.parse throws, and the
    // read fails `invalid` — "a stored document does not fit" — with no second read).
    expect(read instanceof WorkerStoreError ? `${read.kind}: ${read.message}` : 'read').toBe('read');
    expect(read).toEqual(v2.full);
  });
  // A part held PART_SIZE proxies whatever their size, and Firestore refuses a document over 1 MiB: with
  // attributes a proxy may carry (up to 32, values up to 256 characters), 2,000 entries of ~700 bytes
  // are a 1.4 MB part. The save was refused on every pass, so the worker never got another snapshot —
  // nor a renewed grant — and went stale.
  it('splits the proxies into parts Firestore accepts, whatever their attributes weigh', async () => {
    const heavy = snapshot('w-e', 1, PART_SIZE, 'e');
    const attributes = Object.fromEntries(
      Array.from({ length: 12 }, (_, k) => [`attribute-${k}`, `value-${k}-`.padEnd(24, 'x')]),
    );
    heavy.full.proxies = heavy.full.proxies.map((p) => ({ ...p, attributes }));
    expect(JSON.stringify(heavy.full.proxies).length).toBeGreaterThan(1_300_000);
    const err = await refusal(save(heavy));
    expect(err instanceof WorkerStoreError ? `${err.kind}: ${err.message}` : 'saved').toBe('saved');
    expect(await store.loadFull('w-e')).toEqual(heavy.full);
    expect((await db.collection('snapshots/w-e/parts').get()).size).toBeGreaterThan(1);
  });
});
