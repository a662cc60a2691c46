// The local view of leaseState/{proxy}: entries plus the updateTime each was read at, which is the base
// of the next lastUpdateTime-guarded write. Fed by the listener and by this replica's own commits (so its
// own writes are visible at once); a version never goes backwards, whichever arrives first.
import type { DocumentChange, QueryDocumentSnapshot, Timestamp } from '@google-cloud/firestore';
import { type Usage, usageOf } from '../../domain/leases/capacity.js';
import type { LeaseEntry } from '../../domain/leases/model.js';
import { decodeState } from './lease-converter.js';
import type { ListenerSink, StructuredLog } from './lease-listener.js';

export interface StateBase {
  /** null: the stored document is not a valid lease state — the proxy is treated as full (fail closed). */
  entries: readonly LeaseEntry[] | null;
  /** updateTime of the document; null when it does not exist (the next write creates it). */
  version: Timestamp | null;
}

const FULL: Usage = { active: Number.MAX_SAFE_INTEGER, exclusive: true };

export class LeaseStateCache implements ListenerSink {
  private readonly states = new Map<string, StateBase>();
  private readonly owner = new Map<string, string>();

  constructor(private readonly log: StructuredLog) {}

  get(proxy: string): StateBase | undefined {
    return this.states.get(proxy);
  }

  /** The proxy a cached entry belongs to (a shortcut that saves reading the lease document). */
  proxyOf(leaseId: string): string | undefined {
    return this.owner.get(leaseId);
  }

  usage(proxy: string, now: Date): Usage {
    const s = this.states.get(proxy);
    if (!s) return { active: 0, exclusive: false };
    return s.entries ? usageOf(s.entries, now) : FULL;
  }

  totalActive(now: Date): number {
    let n = 0;
    for (const s of this.states.values()) if (s.entries) n += usageOf(s.entries, now).active;
    return n;
  }

  /** Records a state as read or written; ignored when an equal or newer version is already known. */
  put(proxy: string, next: StateBase): void {
    const current = this.states.get(proxy);
    if (current?.version && (!next.version || compareVersions(next.version, current.version) <= 0)) return;
    for (const e of current?.entries ?? []) this.owner.delete(e.leaseId);
    for (const e of next.entries ?? []) this.owner.set(e.leaseId, proxy);
    this.states.set(proxy, next);
  }

  reset(docs: readonly QueryDocumentSnapshot[]): void {
    this.states.clear();
    this.owner.clear();
    for (const doc of docs) this.put(doc.id, this.decode(doc));
  }

  apply(changes: readonly DocumentChange[]): void {
    for (const change of changes) {
      const proxy = change.doc.id;
      if (change.type === 'removed') {
        for (const e of this.states.get(proxy)?.entries ?? []) this.owner.delete(e.leaseId);
        this.states.delete(proxy);
      } else {
        this.put(proxy, this.decode(change.doc));
      }
    }
  }

  private decode(doc: QueryDocumentSnapshot): StateBase {
    const entries = decodeState(doc.data());
    if (!entries) this.log('ERROR', 'malformed lease state: proxy treated as full', { proxy: doc.id });
    return { entries, version: doc.updateTime };
  }
}

export function compareVersions(a: Timestamp, b: Timestamp): number {
  return a.seconds !== b.seconds ? a.seconds - b.seconds : a.nanoseconds - b.nanoseconds;
}
