import { describe, expect, it } from 'vitest';
import type { Phase, ProxyResource } from '../../../shared/src/domain/proxy.js';
import {
  awaitsPass,
  awaitsPassNotBefore,
  awaitsPassSince,
  driftNotBefore,
  isDriftPolled,
} from '../../../shared/src/domain/reconcile/drift.js';
import type {
  ProxyFilter,
  ProxyListing,
  ProxyPage,
  SkippedProxy,
} from '../../../shared/src/ports/proxy-store.js';
import { aProxy, externalSpec, testUid } from '../../../shared/src/testing/proxy-fixtures.js';
import { listSteady, STEADY_PAGE_SIZE } from './steady-fleet.js';

const DRIFT_POLL_MS = 60_000;
/** The page size listSteady is to ask for (STEADY_PAGE_SIZE): the fleets below are sized from it. */
const PAGE = 500;
const deletedAt = new Date('2026-02-01T00:00:00Z');

/** A stored document: a proxy that fits the model, or one that does not (listed as skipped). */
type Doc = { name: string; phase: Phase } & ({ proxy: ProxyResource } | { skipped: SkippedProxy });

/**
 * A store of whole documents, listed both ways: unpaged (listAll) and a page at a time (listPage, in name
 * order, as the Firestore adapter and the port's contract say). It records the pages asked for, and how
 * many were in flight at once (each answers a macrotask later, so that pages asked together overlap).
 */
class PagedStore {
  readonly docs = new Map<string, Doc>();
  readonly pages: Array<{ phase: Phase | undefined; after: string | null; size: number }> = [];
  inFlight = 0;
  maxInFlight = 0;
  /** Called after a page is read, before it is answered (a test changes the store between pages). */
  onPage: (page: ProxyPage) => void | Promise<void> = () => {};

  add(doc: Doc): void {
    this.docs.set(doc.name, doc);
  }

  private matching(filter: ProxyFilter): Doc[] {
    return [...this.docs.values()]
      .filter((d) => !filter.phase || d.phase === filter.phase)
      .sort((a, b) => (a.name < b.name ? -1 : 1));
  }

  private listingOf(docs: Doc[]): ProxyListing {
    return {
      proxies: docs.flatMap((d) => ('proxy' in d ? [structuredClone(d.proxy)] : [])),
      skipped: docs.flatMap((d) => ('skipped' in d ? [structuredClone(d.skipped)] : [])),
    };
  }

  async listAll(filter: ProxyFilter = {}): Promise<ProxyListing> {
    return this.listingOf(this.matching(filter));
  }

  async listPage(filter: ProxyFilter, page: { after: string | null; size: number }): Promise<ProxyPage> {
    this.pages.push({ phase: filter.phase, after: page.after, size: page.size });
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    try {
      await new Promise((resolve) => setImmediate(resolve));
      const read = this.matching(filter)
        .filter((d) => page.after === null || d.name > page.after)
        .slice(0, page.size + 1);
      const docs = read.slice(0, page.size);
      const answer = {
        ...this.listingOf(docs),
        next: read.length > page.size ? docs[docs.length - 1]!.name : null,
      };
      await this.onPage(answer);
      return answer;
    } finally {
      this.inFlight--;
    }
  }
}

const steadyStatus = (phase: Phase) => ({
  phase,
  providerId: 'zones/z/instances/i',
  nextReconcileAt: null,
  observedGeneration: 1,
});

/** The proxy `name` in `phase`, of one of the kinds listSteady tells apart, by `kind`. */
function aDoc(name: string, phase: Phase, kind: number): Doc {
  const uid = testUid();
  switch (kind % 6) {
    case 0: // drift-polled (in a steady phase), or neither (Pending, Failed)
      return { name, phase, proxy: aProxy({ name, uid, status: steadyStatus(phase) }) };
    case 1: // a new proxy whose request was lost: awaits its first pass
      return { name, phase, proxy: aProxy({ name, uid, status: { phase, nextReconcileAt: null } }) };
    case 2: // a deletion whose request was lost
      return {
        name,
        phase,
        proxy: aProxy({ name, uid, deletionRequestedAt: deletedAt, status: steadyStatus(phase) }),
      };
    case 3: // a due time: the due list's, not listed here
      return {
        name,
        phase,
        proxy: aProxy({ name, uid, status: { ...steadyStatus(phase), nextReconcileAt: deletedAt } }),
      };
    case 4: // an external proxy: never drift-polled
      return {
        name,
        phase,
        proxy: aProxy({
          name,
          uid,
          spec: externalSpec(),
          status: { ...steadyStatus(phase), providerId: null },
        }),
      };
    default: // a document that does not fit the model
      return {
        name,
        phase,
        skipped: { name, issues: [{ path: 'spec.port', code: 'invalid_type', message: 'x' }] },
      };
  }
}

/** The listing as it was before pages: one unpaged query per phase, every proxy of it kept that fits. */
async function unpaged(store: PagedStore) {
  const phases = ['Pending', 'Provisioned', 'Ready', 'Unhealthy', 'Failed'] as const;
  const lists = await Promise.all(phases.map((phase) => store.listAll({ phase })));
  const proxies = lists
    .flatMap((l) => l.proxies)
    .filter((p) => isDriftPolled(p) || awaitsPass(p))
    .map((p) => ({
      name: p.name,
      uid: p.uid,
      notBefore: isDriftPolled(p) ? driftNotBefore(p, DRIFT_POLL_MS) : awaitsPassNotBefore(p, DRIFT_POLL_MS),
      awaitingSince: isDriftPolled(p) ? null : awaitsPassSince(p),
      ...(isDriftPolled(p) ? { driftPolled: true } : {}),
    }));
  return { proxies, skipped: lists.flatMap((l) => l.skipped) };
}

const pad = (n: number) => String(n).padStart(5, '0');

describe('listSteady', () => {
  // Each phase was read whole in one query, the five at once, every document parsed before any was let
  // go: ~5.8 KB a proxy at peak, and the function (256 MiB) ran out of memory at ~29,000 proxies.
  it('lists a fleet of several pages a phase whole, one page of the named size at a time', async () => {
    const store = new PagedStore();
    const counts: Array<[Phase, number]> = [
      ['Ready', 2 * PAGE + 1],
      ['Provisioned', PAGE + 7],
      ['Unhealthy', PAGE],
      ['Pending', 3],
      ['Provisioning', 40], // not listed
    ];
    for (const [phase, n] of counts) {
      for (let i = 0; i < n; i++) {
        const name = `${phase.toLowerCase()}-${pad(i)}`;
        store.add({ name, phase, proxy: aProxy({ name, uid: testUid(), status: steadyStatus(phase) }) });
      }
    }
    const { proxies, skipped } = await listSteady(store, DRIFT_POLL_MS);
    expect(proxies).toHaveLength(2 * PAGE + 1 + PAGE + 7 + PAGE);
    expect(new Set(proxies.map((p) => p.name)).size).toBe(proxies.length);
    expect(skipped).toEqual([]);
    expect(store.maxInFlight).toBe(1);
    expect(store.pages.length).toBe(8);
    expect(store.pages.every((p) => p.size === PAGE)).toBe(true);
    const pagesOf = (phase: Phase) => store.pages.filter((p) => p.phase === phase).map((p) => p.after);
    expect(pagesOf('Ready')).toEqual([null, `ready-${pad(499)}`, `ready-${pad(999)}`]);
    expect(pagesOf('Provisioned')).toEqual([null, `provisioned-${pad(499)}`]);
    expect(pagesOf('Unhealthy')).toEqual([null]); // exactly one page: never an empty one after it
    expect(pagesOf('Pending')).toEqual([null]);
    expect(pagesOf('Failed')).toEqual([null]);
    // One phase after another: each phase's pages in a row.
    const order = store.pages.map((p) => p.phase);
    expect(order.filter((p, i) => i === 0 || p !== order[i - 1])).toEqual([
      'Pending',
      'Provisioned',
      'Ready',
      'Unhealthy',
      'Failed',
    ]);
    expect(STEADY_PAGE_SIZE).toBe(PAGE);
  });

  it('answers what the unpaged listing did for a mixed fleet, the documents that do not fit included', async () => {
    const store = new PagedStore();
    const phases: Phase[] = [
      'Pending',
      'Provisioning',
      'Provisioned',
      'Ready',
      'Unhealthy',
      'Failed',
      'Deleting',
    ];
    // Enough of each phase for two pages or more, the kinds interleaved so that page edges fall on each.
    for (const [p, phase] of phases.entries()) {
      for (let i = 0; i < PAGE + 101 + 37 * p; i++) {
        store.add(aDoc(`${phase.toLowerCase()}-${pad(i)}`, phase, i + p));
      }
    }
    const expected = await unpaged(store);
    expect(expected.skipped.length).toBeGreaterThan(0);
    expect(expected.proxies.some((p) => p.awaitingSince !== null)).toBe(true);
    expect(expected.proxies.some((p) => p.awaitingSince === null)).toBe(true);
    // Only listPage: the listing cannot read a phase whole.
    const paged = { listPage: store.listPage.bind(store) };
    expect(await listSteady(paged, DRIFT_POLL_MS)).toEqual(expected);
    expect(store.pages.length).toBeGreaterThan(phases.length);
    expect(store.maxInFlight).toBe(1);
  });

  it('fails the whole listing when any page fails', async () => {
    const store = new PagedStore();
    for (let i = 0; i < PAGE + 1; i++) store.add(aDoc(`ready-${pad(i)}`, 'Ready', 0));
    store.onPage = () => {
      // Pending's page, Provisioned's, Ready's first, then its second: the first pages went well.
      if (store.pages.length === 4) throw new Error('UNAVAILABLE listing a page');
    };
    await expect(listSteady(store, DRIFT_POLL_MS)).rejects.toThrow('UNAVAILABLE listing a page');
    expect(store.pages.map((p) => [p.phase, p.after])).toEqual([
      ['Pending', null],
      ['Provisioned', null],
      ['Ready', null],
      ['Ready', `ready-${pad(PAGE - 1)}`],
    ]);
  });

  // The pages are no one snapshot: a proxy that moves from a phase already read to one not yet read is
  // read twice. It is listed once, as last read; one moved the other way is missed until the next refresh.
  it('lists a proxy read in two phases (moved between pages) once, as last read', async () => {
    const store = new PagedStore();
    const moving = aProxy({
      name: 'moving',
      uid: testUid(),
      status: { phase: 'Pending', nextReconcileAt: null },
    });
    store.add({ name: 'moving', phase: 'Pending', proxy: moving });
    store.onPage = () => {
      if (store.pages.length === 1) {
        store.add({
          name: 'moving',
          phase: 'Ready',
          proxy: { ...moving, status: { ...moving.status, ...steadyStatus('Ready') } },
        });
      }
    };
    const { proxies } = await listSteady(store, DRIFT_POLL_MS);
    expect(proxies).toEqual([expect.objectContaining({ name: 'moving', awaitingSince: null })]);
  });
});
