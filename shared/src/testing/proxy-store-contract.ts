// The ProxyStore port's behaviour, written once and run against every implementation (the in-memory fake
// and the Firestore adapter on the emulator), so that handler tests on the fake mean something.
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import type { ProxyStatus } from '../domain/proxy.js';
import { type ProxyStore, type ProxyWatcher, StoreError } from '../ports/proxy-store.js';
import { aProxy, externalSpec, managedSpec } from './proxy-fixtures.js';

export interface ContractSubject {
  store: ProxyStore & ProxyWatcher;
  /** Empties the store between tests. */
  reset(): Promise<void>;
  close?(): Promise<void>;
}

const at = (iso: string) => new Date(iso);

const richStatus = (): ProxyStatus => ({
  phase: 'Provisioned',
  observedGeneration: 1,
  providerId: 'zones/us-central1-a/instances/pp-0123',
  ip: '10.0.0.7',
  conditions: [
    {
      type: 'Provisioned',
      status: 'True',
      reason: 'Created',
      message: 'instance RUNNING',
      lastTransitionTime: at('2026-01-01T00:01:02.345Z'),
      observedGeneration: 1,
    },
  ],
  specHash: '0123456789abcdef',
  latencyMillis: 42,
  lastHealthCheckTime: at('2026-01-01T00:02:00Z'),
  nextReconcileAt: null,
});

export function proxyStoreContract(label: string, subject: () => Promise<ContractSubject>): void {
  describe(`ProxyStore contract: ${label}`, () => {
    let s: ContractSubject;
    let store: ProxyStore & ProxyWatcher;
    beforeEach(async () => {
      s ??= await subject();
      await s.reset();
      store = s.store;
    });
    afterAll(async () => {
      await s?.close?.();
    });

    it('round-trips a managed proxy with every optional field, and an external one without them', async () => {
      const full = aProxy({
        name: 'full',
        spec: managedSpec({
          cloudInit: { secretRef: { secret: 'ci', version: '3' } },
          credentialsRef: { secret: 'creds' },
          attributes: { region: 'eu', tier: 'a' },
          healthCheck: { url: 'https://example.com/' },
        }),
        status: richStatus(),
      });
      const bare = aProxy({
        name: 'bare',
        spec: externalSpec(),
        deletionRequestedAt: at('2026-01-02T00:00:00Z'),
      });
      await store.create(full);
      await store.create(bare);
      expect((await store.get('full'))?.proxy).toEqual(full);
      expect((await store.get('bare'))?.proxy).toEqual(bare);
      expect((await store.get('bare'))?.proxy.spec).not.toHaveProperty('credentialsRef');
    });

    it('returns null for a missing proxy and refuses a second create of a name', async () => {
      expect(await store.get('nope')).toBeNull();
      await store.create(aProxy({ name: 'dup' }));
      const err = await store.create(aProxy({ name: 'dup' })).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(StoreError);
      expect((err as StoreError).kind).toBe('already_exists');
    });

    it('writes status only at the expected version', async () => {
      await store.create(aProxy({ name: 'w' }));
      const v1 = (await store.get('w'))!.version;
      expect(await store.writeStatus('w', richStatus(), v1)).toBe('written');
      const after = (await store.get('w'))!;
      expect(after.version).not.toBe(v1);
      expect(after.proxy.status).toEqual(richStatus());
      expect(await store.writeStatus('w', { ...richStatus(), ip: '10.9.9.9' }, v1)).toBe('conflict');
      expect((await store.get('w'))!.proxy.status.ip).toBe('10.0.0.7');
      expect(await store.writeStatus('missing', richStatus(), v1)).toBe('gone');
    });

    it('keeps status.unreachableRoutes through a status write, and clears it with the next one', async () => {
      await store.create(aProxy({ name: 'target' }));
      const v1 = (await store.get('target'))!.version;
      const blocked = { ...richStatus(), unreachableRoutes: ['news', 'shop'] };
      expect(await store.writeStatus('target', blocked, v1)).toBe('written');
      const read = (await store.get('target'))!;
      expect(read.proxy.status.unreachableRoutes).toEqual(['news', 'shop']);
      expect(await store.writeStatus('target', richStatus(), read.version)).toBe('written');
      const cleared = (await store.get('target'))!.proxy.status;
      expect('unreachableRoutes' in cleared).toBe(false);
      expect(cleared).toEqual(richStatus());
    });

    it('keeps status.servedCredentials through a status write, and clears it with the next one', async () => {
      await store.create(aProxy({ name: 'served' }));
      const v1 = (await store.get('served'))!.version;
      const rolling = { ...richStatus(), servedCredentials: { secret: 'creds', version: '7' } };
      expect(await store.writeStatus('served', rolling, v1)).toBe('written');
      const read = (await store.get('served'))!;
      expect(read.proxy.status.servedCredentials).toEqual({ secret: 'creds', version: '7' });
      expect(await store.writeStatus('served', richStatus(), read.version)).toBe('written');
      const cleared = (await store.get('served'))!.proxy.status;
      expect('servedCredentials' in cleared).toBe(false);
    });

    it('lets exactly one of several writers at the same version win', async () => {
      await store.create(aProxy({ name: 'race' }));
      const v = (await store.get('race'))!.version;
      const outcomes = await Promise.all(
        [1, 2, 3, 4, 5].map((n) => store.writeStatus('race', { ...richStatus(), latencyMillis: n }, v)),
      );
      expect(outcomes.filter((o) => o === 'written')).toHaveLength(1);
      expect(outcomes.filter((o) => o === 'conflict')).toHaveLength(4);
      const winner = outcomes.indexOf('written') + 1;
      expect((await store.get('race'))!.proxy.status.latencyMillis).toBe(winner);
    });

    it('replaces a spec and bumps the generation only when it changed', async () => {
      await store.create(aProxy({ name: 'spec' }));
      const v1 = (await store.get('spec'))!.version;
      expect(await store.replaceSpec('spec', managedSpec(), v1)).toBe('written');
      const same = (await store.get('spec'))!;
      expect(same.proxy.generation).toBe(1);
      expect(same.version).toBe(v1);
      expect(await store.replaceSpec('spec', managedSpec({ machineType: 'e2-medium' }), v1)).toBe('written');
      const changed = (await store.get('spec'))!;
      expect(changed.proxy.generation).toBe(2);
      expect(changed.proxy.spec).toMatchObject({ machineType: 'e2-medium' });
      expect(await store.replaceSpec('spec', managedSpec({ port: 1 }), v1)).toBe('conflict');
      expect(await store.replaceSpec('missing', managedSpec(), v1)).toBe('gone');
    });

    it('requests deletion once, idempotently', async () => {
      await store.create(aProxy({ name: 'del' }));
      expect(await store.requestDeletion('del', at('2026-01-03T00:00:00Z'))).toBe('written');
      expect(await store.requestDeletion('del', at('2026-01-04T00:00:00Z'))).toBe('written');
      expect((await store.get('del'))!.proxy.deletionRequestedAt).toEqual(at('2026-01-03T00:00:00Z'));
      expect(await store.requestDeletion('missing', at('2026-01-03T00:00:00Z'))).toBe('gone');
    });

    it('requests deletion at an expected version only while the document is at it (a conditional DELETE)', async () => {
      await store.create(aProxy({ name: 'cdel' }));
      const v1 = (await store.get('cdel'))!.version;
      expect(await store.writeStatus('cdel', richStatus(), v1)).toBe('written');
      expect(await store.requestDeletion('cdel', at('2026-01-03T00:00:00Z'), v1)).toBe('conflict');
      expect((await store.get('cdel'))!.proxy.deletionRequestedAt).toBeNull();
      const v2 = (await store.get('cdel'))!.version;
      expect(await store.requestDeletion('cdel', at('2026-01-03T00:00:00Z'), v2)).toBe('written');
      expect((await store.get('cdel'))!.proxy.deletionRequestedAt).toEqual(at('2026-01-03T00:00:00Z'));
      expect(await store.requestDeletion('missing', at('2026-01-03T00:00:00Z'), v2)).toBe('gone');
    });

    it('deletes a document only at the expected version', async () => {
      await store.create(aProxy({ name: 'gone' }));
      const v1 = (await store.get('gone'))!.version;
      expect(await store.writeStatus('gone', richStatus(), v1)).toBe('written');
      expect(await store.deleteDocument('gone', v1)).toBe('conflict');
      const v2 = (await store.get('gone'))!.version;
      expect(await store.deleteDocument('gone', v2)).toBe('written');
      expect(await store.get('gone')).toBeNull();
      expect(await store.deleteDocument('gone', v2)).toBe('gone');
    });

    it('lists due proxies earliest first, up to a limit, never those without a due time', async () => {
      const due = (name: string, iso: string | null) =>
        store.create(aProxy({ name, status: { nextReconcileAt: iso ? at(iso) : null } }));
      await due('late', '2026-01-01T00:00:30Z');
      await due('early', '2026-01-01T00:00:10Z');
      await due('future', '2026-01-01T00:05:00Z');
      await due('steady', null);
      expect(await store.listDue(at('2026-01-01T00:01:00Z'), 10)).toEqual([
        { name: 'early', nextReconcileAt: at('2026-01-01T00:00:10Z') },
        { name: 'late', nextReconcileAt: at('2026-01-01T00:00:30Z') },
      ]);
      expect((await store.listDue(at('2026-01-01T00:01:00Z'), 1)).map((d) => d.name)).toEqual(['early']);
      expect(await store.listDue(at('2026-01-01T00:00:00Z'), 10)).toEqual([]);
      // From a due time on (inclusive): a walk's next page, or only what fell due recently.
      const later = await store.listDue(at('2026-01-01T00:10:00Z'), 10, at('2026-01-01T00:00:30Z'));
      expect(later.map((d) => d.name)).toEqual(['late', 'future']);
    });

    it('gives the uid of every proxy, those being deleted included, for the GC live set', async () => {
      expect(await store.liveUids()).toEqual({ uids: new Set(), managed: new Set() });
      const kept = aProxy({ name: 'kept' });
      const going = aProxy({ name: 'going' });
      const external = aProxy({ name: 'ext', spec: externalSpec() });
      for (const p of [kept, going, external]) await store.create(p);
      expect(await store.requestDeletion('going', at('2026-01-02T00:00:00Z'))).toBe('written');
      // The external proxy is live, but not managed: it never has an instance.
      expect(await store.liveUids()).toEqual({
        uids: new Set([kept.uid, going.uid, external.uid]),
        managed: new Set([kept.uid, going.uid]),
      });
      await store.deleteDocument('kept', (await store.get('kept'))!.version);
      expect(await store.liveUids()).toEqual({
        uids: new Set([going.uid, external.uid]),
        managed: new Set([going.uid]),
      });
    });

    it('says whether a document holds a uid, one being deleted included', async () => {
      const kept = aProxy({ name: 'kept' });
      const going = aProxy({ name: 'going' });
      expect(await store.holdsUid(kept.uid)).toBe(false);
      for (const p of [kept, going]) await store.create(p);
      expect(await store.requestDeletion('going', at('2026-01-02T00:00:00Z'))).toBe('written');
      expect(await store.holdsUid(kept.uid)).toBe(true);
      expect(await store.holdsUid(going.uid)).toBe(true);
      expect(await store.holdsUid('00000000-0000-4000-8000-000000000000')).toBe(false);
      await store.deleteDocument('going', (await store.get('going'))!.version);
      expect(await store.holdsUid(going.uid)).toBe(false);
    });

    // An instance is named from its uid's first 20 hex digits, lowercased (instance-name.ts): a uid that
    // names the same instance is held by the document that holds the uid, however it is spelled.
    it('says a document holds a uid naming its instance: in capitals, or differing past the name', async () => {
      const held = aProxy({ name: 'held', uid: 'c0ffee00-1234-4abc-8def-0123456789ab' });
      await store.create(held);
      expect(await store.holdsUid(held.uid.toUpperCase())).toBe(true);
      expect(await store.holdsUid(`${held.uid.slice(0, 24)}000000000000`)).toBe(true);
      const differs = held.uid.slice(0, 22) + (held.uid[22] === '0' ? '1' : '0') + held.uid.slice(23);
      expect(await store.holdsUid(differs)).toBe(false);
    });

    // A uid stored in mixed case (a console edit; the model takes any case) was found by neither the
    // lower- nor the upper-case prefix: its instance could be deleted under a live proxy.
    it('says a document holding its uid in mixed case holds it, however the question spells it', async () => {
      const uid = 'c0ffee00-1234-4abc-8def-0123456789ab';
      await store.create(aProxy({ name: 'mixed', uid: 'C0ffEe00-1234-4aBc-8DEF-0123456789aB' }));
      for (const asked of [uid, uid.toUpperCase(), 'c0FFee00-1234-4ABC-8def-000000000000'])
        expect(await store.holdsUid(asked)).toBe(true);
      expect(await store.holdsUid('c0ffee01-1234-4abc-8def-0123456789ab')).toBe(false);
    });

    it('says whether a document records an instance in its status', async () => {
      const providerId = 'zones/us-central1-a/instances/pp-d00d0000000040008000';
      await store.create(aProxy({ name: 'recorder' }));
      expect(await store.recordsInstance(providerId)).toBe(false);
      const read = (await store.get('recorder'))!;
      expect(await store.writeStatus('recorder', { ...read.proxy.status, providerId }, read.version)).toBe(
        'written',
      );
      expect(await store.recordsInstance(providerId)).toBe(true);
      expect(await store.recordsInstance(`${providerId}0`)).toBe(false);
    });

    it('follows the collection: its first view is the listing, later writes reach it, stop() ends it', async () => {
      await store.create(aProxy({ name: 'w1', status: richStatus() }));
      const view = await store.watchAll();
      const seen = () => view.current().proxies.map((p) => `${p.name}@${p.status.ip ?? '-'}`);
      try {
        expect(seen()).toEqual(['w1@10.0.0.7']);
        expect(view.current().skipped).toEqual([]);
        await store.create(aProxy({ name: 'w2' }));
        const w1 = (await store.get('w1'))!;
        expect(await store.writeStatus('w1', { ...w1.proxy.status, ip: null }, w1.version)).toBe('written');
        // A listener's snapshot comes a moment after the write: bounded wait.
        for (let i = 0; i < 100 && seen().join() !== 'w1@-,w2@-'; i++)
          await new Promise((r) => setTimeout(r, 50));
        expect(seen()).toEqual(['w1@-', 'w2@-']);
        expect(view.failure()).toBeNull();
      } finally {
        view.stop();
      }
      await store.create(aProxy({ name: 'w3' }));
      await new Promise((r) => setTimeout(r, 300));
      expect(seen()).toEqual(['w1@-', 'w2@-']);
    });

    it('filters lists by phase and attributes', async () => {
      await store.create(
        aProxy({
          name: 'a',
          spec: managedSpec({ attributes: { region: 'eu' } }),
          status: { phase: 'Ready' },
        }),
      );
      await store.create(
        aProxy({
          name: 'b',
          spec: managedSpec({ attributes: { region: 'us' } }),
          status: { phase: 'Ready' },
        }),
      );
      await store.create(aProxy({ name: 'c', spec: managedSpec({ attributes: { region: 'eu' } }) }));
      const names = async (f: Parameters<ProxyStore['list']>[0]) => (await store.list(f)).map((p) => p.name);
      expect(await names({})).toEqual(['a', 'b', 'c']);
      expect(await names({ phase: 'Ready' })).toEqual(['a', 'b']);
      expect(await names({ attributes: { region: 'eu' } })).toEqual(['a', 'c']);
      expect(await names({ phase: 'Ready', attributes: { region: 'eu' } })).toEqual(['a']);
    });

    it('pages a listing in name order: each page after the last name of the one before, filters and all', async () => {
      // Created out of order: the pages are in name order, whatever the order of creation.
      for (const [name, region, phase] of [
        ['p5', 'eu', 'Ready'],
        ['p1', 'eu', 'Ready'],
        ['p7', 'us', 'Ready'],
        ['p3', 'eu', 'Pending'],
        ['p2', 'us', 'Ready'],
        ['p6', 'eu', 'Ready'],
        ['p4', 'eu', 'Ready'],
      ] as const) {
        await store.create(
          aProxy({ name, spec: managedSpec({ attributes: { region } }), status: { phase } }),
        );
      }
      const pages = async (filter: Parameters<ProxyStore['listPage']>[0], size: number) => {
        const out: Array<{ names: string[]; next: string | null }> = [];
        let after: string | null = null;
        do {
          const page = await store.listPage(filter, { after, size });
          out.push({ names: page.proxies.map((p) => p.name), next: page.next });
          expect(page.skipped).toEqual([]);
          after = page.next;
        } while (after !== null && out.length < 10);
        return out;
      };
      expect(await pages({}, 3)).toEqual([
        { names: ['p1', 'p2', 'p3'], next: 'p3' },
        { names: ['p4', 'p5', 'p6'], next: 'p6' },
        { names: ['p7'], next: null },
      ]);
      // A last page that is full says so: no empty page after it.
      expect(await pages({}, 7)).toEqual([{ names: ['p1', 'p2', 'p3', 'p4', 'p5', 'p6', 'p7'], next: null }]);
      expect(await pages({ attributes: { region: 'eu' } }, 2)).toEqual([
        { names: ['p1', 'p3'], next: 'p3' },
        { names: ['p4', 'p5'], next: 'p5' },
        { names: ['p6'], next: null },
      ]);
      expect(await pages({ phase: 'Ready', attributes: { region: 'eu' } }, 3)).toEqual([
        { names: ['p1', 'p4', 'p5'], next: 'p5' },
        { names: ['p6'], next: null },
      ]);
      // After any name, stored or not: the next one that matches.
      expect((await store.listPage({}, { after: 'p35', size: 2 })).proxies.map((p) => p.name)).toEqual([
        'p4',
        'p5',
      ]);
      expect(await store.listPage({}, { after: 'p7', size: 2 })).toEqual({
        proxies: [],
        skipped: [],
        next: null,
      });
    });
  });
}
