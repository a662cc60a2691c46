// FleetFeed on Firestore listeners (onSnapshot) over proxies, health, leaseState, cooldowns, ownership
// and jobRuns. Listeners run only while someone looks: the first page view, SSE stream or state request
// starts them, and they stop IDLE_MS after the last one went away, so an API nobody watches pays no
// reads for the page, nor keeps the fleet it showed in memory. Documents that do not decode are skipped
// (and logged once per id), never fatal.
// Cooldowns are read as the lease service reads them: only those still running, re-subscribed hourly —
// the whole collection is mostly ended ones until Firestore's TTL deletes them (a day at crawler volumes).
import type { DocumentData, Firestore, QueryDocumentSnapshot } from '@google-cloud/firestore';
import { Timestamp } from '@google-cloud/firestore';
import { Collections } from '../../../../shared/src/adapters/firestore/collections.js';
import { healthFromDoc } from '../../../../shared/src/adapters/firestore/health-store.js';
import { decodeCooldown, decodeState } from '../../../../shared/src/adapters/firestore/lease-converter.js';
import {
  type CollectionListener,
  listenCollection,
} from '../../../../shared/src/adapters/firestore/lease-listener.js';
import { COOLDOWN_LISTENER_RENEW_MS } from '../../../../shared/src/adapters/firestore/lease-store.js';
import { proxyFromFirestore } from '../../../../shared/src/adapters/firestore/proxy-converter.js';
import type { Logger } from '../../../../shared/src/adapters/log/json-logger.js';
import { outsideTrace } from '../../../../shared/src/adapters/log/trace-context.js';
import type { ProxyHealthState } from '../../../../shared/src/domain/health/proxy-health.js';
import type { Cooldown, LeaseEntry } from '../../../../shared/src/domain/leases/model.js';
import type { ProxyResource } from '../../../../shared/src/domain/proxy.js';
import { type Clock, systemClock } from '../../../../shared/src/ports/clock.js';
import type { JobRun } from '../../../../shared/src/ports/job-runs.js';
import type { FleetFeed } from './feed.js';
import { decodeOwnershipShard } from './ownership-doc.js';
import { type FleetInputs, type StoredOwnership, UNREADABLE_STATE } from './view-model.js';

const IDLE_MS = 60_000;
const READY_TIMEOUT_MS = 15_000;

type Decoder<T> = (id: string, data: DocumentData) => T | null;

/** One collection mirrored in memory as id → decoded value. */
class Mirror<T> {
  readonly docs = new Map<string, T>();
  /** Documents that did not decode, named once each (until they decode, go, or the listener restarts). */
  private readonly bad = new Set<string>();
  constructor(
    private readonly decode: Decoder<T>,
    private readonly onChange: () => void,
    private readonly onBad: (id: string, err: unknown) => void,
  ) {}

  private put(snap: QueryDocumentSnapshot): void {
    try {
      const v = this.decode(snap.id, snap.data());
      this.bad.delete(snap.id);
      if (v === null) this.docs.delete(snap.id);
      else this.docs.set(snap.id, v);
    } catch (err) {
      this.docs.delete(snap.id);
      if (this.bad.has(snap.id)) return;
      this.bad.add(snap.id);
      this.onBad(snap.id, err);
    }
  }

  /** Forgets every document: a stopped listener's view is not kept for an instance's life. */
  clear(): void {
    this.docs.clear();
    this.bad.clear();
  }

  sink() {
    return {
      reset: (docs: readonly QueryDocumentSnapshot[]) => {
        this.docs.clear();
        this.bad.clear();
        for (const d of docs) this.put(d);
        this.onChange();
      },
      apply: (changes: readonly { type: string; doc: QueryDocumentSnapshot }[]) => {
        for (const c of changes) {
          if (c.type === 'removed') {
            this.docs.delete(c.doc.id);
            this.bad.delete(c.doc.id);
          } else this.put(c.doc);
        }
        this.onChange();
      },
    };
  }
}

const date = (v: unknown): Date | null => (v instanceof Timestamp ? v.toDate() : null);

function decodeJobRun(id: string, d: DocumentData): JobRun {
  return {
    job: id,
    startedAt: date(d.startedAt) ?? new Date(0),
    finishedAt: date(d.finishedAt),
    ok: typeof d.ok === 'boolean' ? d.ok : null,
    counts: (d.counts ?? {}) as Record<string, number>,
    error: typeof d.error === 'string' ? d.error : null,
  };
}

export class FirestoreFleetFeed implements FleetFeed {
  private readonly listeners = new Set<() => void>();
  private running: CollectionListener[] = [];
  private loaded: Promise<void> | null = null;
  private idleTimer: NodeJS.Timeout | null = null;
  /** Set by stop(), for good: the client is terminated next (wiring.ts), and a listener started on it then
   * rejects in a promise the Firestore library drops (an unhandled rejection per collection). */
  private stopped = false;
  private readonly proxies: Mirror<ProxyResource>;
  private readonly health: Mirror<ProxyHealthState>;
  private readonly leaseState: Mirror<LeaseEntry[] | typeof UNREADABLE_STATE>;
  private readonly cooldowns: Mirror<Cooldown>;
  private readonly ownership: Mirror<Map<string, StoredOwnership>>;
  private readonly jobRuns: Mirror<JobRun>;

  constructor(
    private readonly db: Firestore,
    private readonly log: Logger,
    private readonly clock: Clock = systemClock,
    private readonly idleMs = IDLE_MS,
  ) {
    const changed = () => {
      for (const l of this.listeners) l();
    };
    const bad = (collection: string) => (id: string, err: unknown) => {
      this.log.warn('fleet page: skipping a document that does not decode', {
        collection,
        id,
        err: err instanceof Error ? err.message.slice(0, 300) : String(err),
      });
    };
    this.proxies = new Mirror((id, d) => proxyFromFirestore(d, id), changed, bad(Collections.proxies));
    this.health = new Mirror((_, d) => healthFromDoc(d), changed, bad(Collections.health));
    // Kept as unreadable, not skipped: the proxy counts as full to the lease service, and the row says so.
    this.leaseState = new Mirror(
      (_, d) => decodeState(d) ?? UNREADABLE_STATE,
      changed,
      bad(Collections.leaseState),
    );
    this.cooldowns = new Mirror((_, d) => decodeCooldown(d), changed, bad(Collections.cooldowns));
    this.ownership = new Mirror((id, d) => decodeOwnershipShard(id, d), changed, bad(Collections.ownership));
    this.jobRuns = new Mirror(decodeJobRun, changed, bad(Collections.jobRuns));
  }

  private start(): Promise<void> {
    if (this.loaded) return this.loaded;
    const listen = (name: string, mirror: Mirror<unknown>) =>
      listenCollection(this.db.collection(name), mirror.sink(), { name: `fleet ${name}`, log: this.log });
    const running = () =>
      this.db.collection(Collections.cooldowns).where('until', '>', Timestamp.fromDate(this.clock.now()));
    this.running = [
      listen(Collections.proxies, this.proxies),
      listen(Collections.health, this.health),
      listen(Collections.leaseState, this.leaseState),
      listenCollection(running, this.cooldowns.sink(), {
        name: `fleet ${Collections.cooldowns}`,
        log: this.log,
        renewEveryMs: COOLDOWN_LISTENER_RENEW_MS,
      }),
      listen(Collections.ownership, this.ownership),
      listen(Collections.jobRuns, this.jobRuns),
    ];
    const loaded = Promise.all(this.running.map((l) => l.ready(READY_TIMEOUT_MS))).then(() => {});
    this.loaded = loaded;
    // A failed first load is retried by the next request rather than cached forever.
    loaded.catch(() => {
      if (this.loaded === loaded) this.halt();
    });
    return loaded;
  }

  /** Stops the listeners and drops their view: the whole fleet stayed on the heap once nobody looked. */
  private halt(): void {
    for (const l of this.running) l.stop();
    this.running = [];
    this.loaded = null;
    for (const m of this.mirrors()) m.clear();
  }

  private mirrors(): Mirror<unknown>[] {
    return [this.proxies, this.health, this.leaseState, this.cooldowns, this.ownership, this.jobRuns];
  }

  /** Keeps the listeners for IDLE_MS after the last use, then stops them. */
  private touch(): void {
    if (this.stopped) return;
    if (this.idleTimer) clearTimeout(this.idleTimer);
    // Outside the trace of the request that touched it: the timer outlives it, and renews itself.
    this.idleTimer = outsideTrace(() =>
      setTimeout(() => {
        this.idleTimer = null;
        if (this.listeners.size === 0) this.halt();
        else this.touch();
      }, this.idleMs),
    );
    this.idleTimer.unref();
  }

  /** Rejects once stopped: a request still running at shutdown answers 503 rather than listen again. */
  ready(): Promise<void> {
    if (this.stopped) return Promise.reject(new Error('fleet feed stopped'));
    this.touch();
    return this.start();
  }

  inputs(): FleetInputs {
    const ownership = new Map<string, StoredOwnership>();
    for (const shard of this.ownership.docs.values()) for (const [k, v] of shard) ownership.set(k, v);
    return {
      proxies: this.proxies.docs,
      health: this.health.docs,
      leaseState: this.leaseState.docs,
      cooldowns: [...this.cooldowns.docs.values()],
      ownership,
      jobRuns: [...this.jobRuns.docs.values()],
    };
  }

  subscribe(onChange: () => void): () => void {
    this.listeners.add(onChange);
    this.touch();
    return () => {
      this.listeners.delete(onChange);
      this.touch();
    };
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.listeners.clear();
    this.halt();
  }
}
