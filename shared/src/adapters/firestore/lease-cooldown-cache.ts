// The local view of cooldowns/*, kept by a listener plus this replica's own writes. Cooldowns steer
// selection (they are advisory, unlike capacity): another replica's report takes effect here within the
// listener delay, and a restarted replica loads all of them before it serves.
import type { DocumentChange, QueryDocumentSnapshot } from '@google-cloud/firestore';
import { isCoolingDown } from '../../domain/leases/cooldown.js';
import type { Cooldown } from '../../domain/leases/model.js';
import type { Logger } from '../log/json-logger.js';
import { decodeCooldown } from './lease-converter.js';
import type { ListenerSink } from './lease-listener.js';

export class LeaseCooldownCache implements ListenerSink {
  /** proxy → target → until */
  private readonly index = new Map<string, Map<string, Date>>();
  /** document id → (proxy, target), to apply removals */
  private readonly keys = new Map<string, { proxy: string; target: string }>();

  constructor(private readonly log: Logger) {}

  coolingDown(proxy: string, target: string | null, now: Date): boolean {
    return isCoolingDown(this.index, proxy, target, now);
  }

  put(docId: string, c: Pick<Cooldown, 'proxy' | 'target' | 'until'>): void {
    this.keys.set(docId, { proxy: c.proxy, target: c.target });
    const byTarget = this.index.get(c.proxy) ?? new Map<string, Date>();
    byTarget.set(c.target, c.until);
    this.index.set(c.proxy, byTarget);
  }

  reset(docs: readonly QueryDocumentSnapshot[]): void {
    this.index.clear();
    this.keys.clear();
    for (const doc of docs) this.upsert(doc);
  }

  apply(changes: readonly DocumentChange[]): void {
    for (const change of changes) {
      if (change.type === 'removed') this.remove(change.doc.id);
      else this.upsert(change.doc);
    }
  }

  private upsert(doc: QueryDocumentSnapshot): void {
    const c = decodeCooldown(doc.data());
    if (c) this.put(doc.id, c);
    else this.log.warn('malformed cooldown document ignored', { id: doc.id });
  }

  private remove(docId: string): void {
    const key = this.keys.get(docId);
    if (!key) return;
    this.keys.delete(docId);
    const byTarget = this.index.get(key.proxy);
    byTarget?.delete(key.target);
    if (byTarget?.size === 0) this.index.delete(key.proxy);
  }
}
