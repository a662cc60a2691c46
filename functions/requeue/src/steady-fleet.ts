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
}

const STEADY_PHASES = ['Provisioned', 'Ready', 'Unhealthy'] as const;
/** Where a proxy whose request was lost can sit with nothing due (drift.ts awaitsPass): a new one, one of
 *  the steady phases, or a latched failure. Provisioning always has a due time; Deleting is in hand. */
const LISTED_PHASES = ['Pending', ...STEADY_PHASES, 'Failed'] as const;

/**
 * The proxies the sweep drift-polls, and the documents the same queries matched that do not fit the model
 * (neither drift-polled nor awaiting a pass can be told from such a document: the caller says so).
 */
export async function listSteady(
  store: Pick<ProxyStore, 'listAll'>,
  driftPollMs: number,
): Promise<{ proxies: SteadyProxy[]; skipped: SkippedProxy[] }> {
  const lists = await Promise.all(LISTED_PHASES.map((phase) => store.listAll({ phase })));
  const proxies = lists
    .flatMap((l) => l.proxies)
    .filter((p) => isDriftPolled(p) || awaitsPass(p))
    .map((p: ProxyResource) => ({
      name: p.name,
      uid: p.uid,
      notBefore: isDriftPolled(p) ? driftNotBefore(p, driftPollMs) : awaitsPassNotBefore(p, driftPollMs),
      awaitingSince: isDriftPolled(p) ? null : awaitsPassSince(p),
    }));
  return { proxies, skipped: lists.flatMap((l) => l.skipped) };
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
