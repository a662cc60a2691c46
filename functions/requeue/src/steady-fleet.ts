// The steady fleet the sweep drift-polls, listed at most every `refreshMs` by one function instance.
// Listing it every tick would read every steady document once per tick to find the few whose drift slot
// falls in the tick's window (locally the tick is 2 s). A stale entry is harmless: a proxy that became
// steady since waits at least a DriftPoll for its first slot anyway, and a proxy that left the steady
// state since gets one extra pass, which reads its real state. The same listing finds the proxies whose
// request was lost (drift.ts awaitsPass): they are published on their drift slots too, until a pass
// goes through.
import type { ProxyResource } from '../../../shared/src/domain/proxy.js';
import {
  awaitsPass,
  awaitsPassNotBefore,
  awaitsPassSince,
  driftNotBefore,
  isDriftPolled,
} from '../../../shared/src/domain/reconcile/drift.js';
import type { ProxyStore, SkippedProxy } from '../../../shared/src/ports/proxy-store.js';

export interface SteadyProxy {
  name: string;
  uid: string;
  /** No drift poll before this (DriftPoll after the instance was seen Running). */
  notBefore: Date | null;
  /** A proxy awaiting a pass whose request was lost (drift.ts awaitsPass): when it was asked for. Its
   *  slots back off (awaitsPassSlotDue); null, published at every slot, for a steady, drift-polled proxy
   *  and for one awaiting the pass of a spec edit (awaitsPassSince). */
  awaitingSince: Date | null;
  /** A steady proxy drift-polled (not one awaiting a pass): its slot is published as a `drift-poll`, whose
   *  failed pass is not retried (the next slot polls again); an awaiting one's as a `requeue`. */
  driftPolled?: boolean;
}

const STEADY_PHASES = ['Provisioned', 'Ready', 'Unhealthy'] as const;
/** Where a proxy whose request was lost can sit with nothing due (drift.ts awaitsPass): a new one, one of
 *  the steady phases, or a latched failure. Provisioning always has a due time; Deleting is in hand. */
const LISTED_PHASES = ['Pending', ...STEADY_PHASES, 'Failed'] as const;

/**
 * Documents per page of the listing (listPage). A listing keeps ~150 bytes of each proxy (SteadyProxy)
 * but reads and parses its whole document on the way (~5.8 KB at peak): listing a phase in one query
 * (listAll), five phases at once, held every document of the fleet at the same time, and the function
 * (256 MiB) ran out of memory — the tick, its due times with it — at about 29,000 proxies. A page at a time
 * holds ~3 MB of documents whatever the fleet, and costs one query (one round trip) per 500 proxies.
 */
export const STEADY_PAGE_SIZE = 500;

/**
 * The proxies the sweep drift-polls, and the documents the same queries matched that do not fit the model
 * (neither drift-polled nor awaiting a pass can be told from such a document: the caller says so).
 *
 * Listed a phase after another, a page after another (listPage, in name order), each page reduced to its
 * SteadyProxy entries before the next is read: only one page of whole documents is alive at a time. Any
 * page failing fails the listing, as the one query per phase did (SteadyFleet lists again). No deadline of
 * its own: each page is one call of the store, bounded as its calls are (the requeue function's store sets
 * no callDeadlineMs: the client's own, and the function's timeout), and the caller bounds the whole — the
 * sweep goes on without its drift slots past listingTimeoutMs, and SteadyFleet shares a listing for
 * maxShareMs only, so a page that hangs holds neither a sweep nor the next listings.
 *
 * The pages of one listing are not one snapshot: a proxy that changes phase meanwhile may be read twice
 * (in both phases: the last read is kept, deduplicated by name) or not at all (it moved to a phase already
 * listed, or behind a cursor). One missed has no drift slot until the next refresh lists it — at most
 * `refreshMs` later, as for a proxy that became steady since the last listing (see the top).
 */
export async function listSteady(
  store: Pick<ProxyStore, 'listPage'>,
  driftPollMs: number,
): Promise<{ proxies: SteadyProxy[]; skipped: SkippedProxy[] }> {
  // By name, the last read of each document: a proxy (null when it is neither drift-polled nor awaiting a
  // pass) or a document that does not fit the model. Insertion order is the order first read.
  const read = new Map<string, { proxy: SteadyProxy | null } | { skipped: SkippedProxy }>();
  for (const phase of LISTED_PHASES) {
    let after: string | null = null;
    do {
      const page = await store.listPage({ phase }, { after, size: STEADY_PAGE_SIZE });
      for (const p of page.proxies) read.set(p.name, { proxy: steadyEntry(p, driftPollMs) });
      for (const s of page.skipped) read.set(s.name, { skipped: s });
      // A cursor that does not move would read the same page for ever.
      if (page.next !== null && page.next === after) {
        throw new Error(`listing ${phase} proxies: the page after ${after} did not move past it`);
      }
      after = page.next;
    } while (after !== null);
  }
  const proxies: SteadyProxy[] = [];
  const skipped: SkippedProxy[] = [];
  for (const entry of read.values()) {
    if ('skipped' in entry) skipped.push(entry.skipped);
    else if (entry.proxy) proxies.push(entry.proxy);
  }
  return { proxies, skipped };
}

function steadyEntry(p: ProxyResource, driftPollMs: number): SteadyProxy | null {
  if (isDriftPolled(p)) {
    return {
      name: p.name,
      uid: p.uid,
      notBefore: driftNotBefore(p, driftPollMs),
      awaitingSince: null,
      driftPolled: true,
    };
  }
  if (awaitsPass(p)) {
    return {
      name: p.name,
      uid: p.uid,
      notBefore: awaitsPassNotBefore(p, driftPollMs),
      awaitingSince: awaitsPassSince(p),
    };
  }
  return null;
}

export class SteadyFleet {
  private listed: { at: number; proxies: SteadyProxy[] } | null = null;
  /**
   * The listing under way, which a sweep that finds the last one due shares: one that outlives its
   * sweep's deadline (a large fleet) runs on and caches its result, and the next sweep started a second
   * full listing beside it — a tick later a third — while none had landed. Shared for `maxShareMs` from
   * its start only: a listing that hangs must not hold every later sweep without drift slots.
   */
  private loading: { since: number; proxies: Promise<SteadyProxy[]> } | null = null;

  constructor(
    private readonly refreshMs: number,
    private readonly maxShareMs = MAX_SHARE_MS,
  ) {}

  async get(now: number, load: () => Promise<SteadyProxy[]>): Promise<SteadyProxy[]> {
    if (this.listed && now - this.listed.at < this.refreshMs) return this.listed.proxies;
    if (!this.loading || now - this.loading.since >= this.maxShareMs) {
      const loading = {
        since: now,
        proxies: load()
          .then((proxies) => {
            // A listing given up on (past maxShareMs) that lands after a newer one is not the fresher.
            if (!this.listed || this.listed.at <= now) this.listed = { at: now, proxies };
            return proxies;
          })
          // Settled either way, the next sweep lists again if it must (a failed listing is not kept).
          .finally(() => {
            if (this.loading === loading) this.loading = null;
          }),
      };
      this.loading = loading;
    }
    return this.loading.proxies;
  }
}

/** How long a listing under way is shared: the function's timeout (functions.json requeue, 120 s). */
const MAX_SHARE_MS = 120_000;
