// ReplacementSlots on Firestore: `replacements/slots`, one small document holding every slot
// ({ slots: [{ proxy, uid, takenAt, takeId, replacing }] }). Every change is a transaction over that document running the
// pure slot arithmetic (domain/reconcile/replacement-slots.ts), so concurrent takers never exceed the cap
// and a duplicate delivery finds its own slot. Only the reconcile function writes it.
import { randomUUID } from 'node:crypto';
import { type DocumentData, type Firestore, Timestamp } from '@google-cloud/firestore';
import { z } from 'zod';
import {
  REPLACEMENT_SLOT_STALE_MS,
  type ReplacementSlot,
  releaseSlot,
  restampSlot,
  type SlotChange,
  type SlotGrant,
  type SlotHolder,
  type SlotPolicy,
  type TakeIntent,
  takeSlot,
} from '../../domain/reconcile/replacement-slots.js';
import type { Clock } from '../../ports/clock.js';
import type { ReplacementSlots } from '../../ports/replacement-slots.js';
import { Collections } from './collections.js';

export const REPLACEMENT_SLOTS_DOC = 'slots';

export interface FirestoreReplacementSlotsOptions {
  /** RECONCILE_MAX_REPLACING; 0 = unlimited. */
  limit: number;
  staleAfterMs?: number;
  clock: Clock;
}

export class FirestoreReplacementSlots implements ReplacementSlots {
  private readonly policy: SlotPolicy;
  private readonly clock: Clock;

  constructor(
    private readonly db: Firestore,
    opts: FirestoreReplacementSlotsOptions,
  ) {
    this.policy = { limit: opts.limit, staleAfterMs: opts.staleAfterMs ?? REPLACEMENT_SLOT_STALE_MS };
    this.clock = opts.clock;
  }

  private ref() {
    return this.db.collection(Collections.replacements).doc(REPLACEMENT_SLOTS_DOC);
  }

  async take(holder: SlotHolder, intent?: TakeIntent): Promise<SlotGrant> {
    if (this.policy.limit === 0) return { granted: true };
    // A plain read first: a proxy that would be refused on it is refused without a transaction (a
    // refusal from a stale read only delays a replacement by one retry), so a queue of waiting proxies
    // does not contend for the document the replacing ones write.
    const stored = slotsOf((await this.ref().get()).data());
    const peek = takeSlot(stored, holder, this.clock.now(), this.policy, undefined, intent);
    if (!peek.result.granted && !peek.next) return peek.result;
    // Named once for every run of the transaction: a re-run after the commit landed (its answer lost)
    // finds the slot this take staged and reads it as taken, not as held before (takeSlot).
    const takeId = randomUUID();
    return this.change((slots) => takeSlot(slots, holder, this.clock.now(), this.policy, takeId, intent));
  }

  async restamp(holder: SlotHolder, replacing: string): Promise<boolean> {
    if (this.policy.limit === 0) return false;
    // Mostly a duplicate delivery's delete, which finds the slot already so: a plain read settles it.
    const peek = restampSlot(slotsOf((await this.ref().get()).data()), holder, replacing);
    if (!peek.next) return peek.result;
    return this.change((slots) => restampSlot(slots, holder, replacing));
  }

  async release(holder: SlotHolder, proven?: string): Promise<boolean> {
    if (this.policy.limit === 0) return false;
    // Most releases are asked by a first create's pass, which holds nothing: a plain read settles those
    // (a committed take is visible to it) without a transaction on the contended document.
    if (!releaseSlot(slotsOf((await this.ref().get()).data()), holder, proven).next) return false;
    return this.change((slots) => releaseSlot(slots, holder, proven));
  }

  /** Reads the slots in a transaction, and writes them back only when `decide` changed them. */
  private change<T>(decide: (slots: ReplacementSlot[]) => SlotChange<T>): Promise<T> {
    return this.db.runTransaction(async (tx) => {
      const snap = await tx.get(this.ref());
      const { result, next } = decide(slotsOf(snap.data()));
      if (next) {
        const unknown = unknownFieldsOf(snap.data());
        // Merged: a top-level field a newer revision stores stays too (the slots list is replaced whole).
        tx.set(
          this.ref(),
          {
            slots: next.map((s) => ({
              // Fields a newer revision stores that this one does not know, kept on the slot they belong to.
              ...unknown.get(slotKey(s)),
              proxy: s.proxy,
              uid: s.uid,
              takenAt: Timestamp.fromDate(s.takenAt),
              ...(s.takeId === undefined ? {} : { takeId: s.takeId }),
              ...(s.replacing === undefined ? {} : { replacing: s.replacing }),
            })),
          },
          { merge: true },
        );
      }
      return result;
    });
  }

  /** Every slot held now (tests and operators' eyes). */
  async list(): Promise<ReplacementSlot[]> {
    return slotsOf((await this.ref().get()).data());
  }
}

const KNOWN_FIELDS: ReadonlySet<string> = new Set(['proxy', 'uid', 'takenAt', 'takeId', 'replacing']);

/** One slot as taken: a slot taken again (a new takenAt) is another, and keeps nothing of the last. */
const slotKey = (s: Pick<ReplacementSlot, 'proxy' | 'uid' | 'takenAt'>): string =>
  `${s.proxy}\u0000${s.uid}\u0000${s.takenAt.getTime()}`;

/**
 * Per stored slot, the fields this revision does not know. The slots list is rewritten whole, and during a
 * rolling deploy an older revision's write dropped what a newer one had stored — `replacing` (which
 * instance a slot's replacement replaces) and `takeId` went that way, the slot then freed by the old
 * instance's Healthy verdict while its replacement still ran (docs/deploy.md § Upgrading).
 */
function unknownFieldsOf(data: DocumentData | undefined): Map<string, Record<string, unknown>> {
  const out = new Map<string, Record<string, unknown>>();
  const raw: unknown = data?.slots;
  if (!Array.isArray(raw)) return out;
  for (const entry of raw) {
    const parsed = StoredSlot.safeParse(entry);
    if (!parsed.success) continue;
    const extra = Object.fromEntries(
      Object.entries(entry as Record<string, unknown>).filter(([k]) => !KNOWN_FIELDS.has(k)),
    );
    if (Object.keys(extra).length > 0) out.set(slotKey(parsed.data), extra);
  }
  return out;
}

const StoredSlot = z.object({
  proxy: z.string().min(1),
  uid: z.string().min(1),
  takenAt: z.instanceof(Timestamp).transform((t) => t.toDate()),
  takeId: z.string().optional().catch(undefined),
  replacing: z.string().optional().catch(undefined),
});

/**
 * The slots stored. An entry that does not parse (a hand edit) is dropped: it holds no room, and the next
 * write leaves it out — the document is small, disposable state, never worth wedging replacements over.
 */
function slotsOf(data: DocumentData | undefined): ReplacementSlot[] {
  const raw: unknown = data?.slots;
  if (!Array.isArray(raw)) return [];
  return raw.flatMap((s) => {
    const parsed = StoredSlot.safeParse(s);
    return parsed.success ? [parsed.data] : [];
  });
}
