// The fleet-wide cap on concurrent replacements (docs/gc-and-rotation.md § Rolling replacement): at most
// `limit` managed proxies may be between "old instance deleted for a stale hash" and "new instance with the
// current hash found healthy". Pure slot arithmetic over the one small document that holds the slots; the
// adapter runs it inside a transaction (adapters/firestore/replacement-slots.ts), so taking and releasing
// are idempotent and a proxy holds at most one slot however many deliveries race for it.

/** Who holds a slot: the proxy and its uid (a proxy deleted and re-created under its name is another one). */
export interface SlotHolder {
  proxy: string;
  uid: string;
}

export interface ReplacementSlot extends SlotHolder {
  takenAt: Date;
  /** The take that staged it (absent on a slot stored before takes were named). */
  takeId?: string;
}

export interface SlotPolicy {
  /** At most this many slots at once; 0 = unlimited (no bookkeeping at all). */
  limit: number;
  /** A slot held this long is reclaimable: a pass that crashed mid-replacement never wedges the fleet. */
  staleAfterMs: number;
}

/** A replacement that outlives this (a boot is 1–3 min on GCE) has lost its way; its slot is freed. */
export const REPLACEMENT_SLOT_STALE_MS = 15 * 60_000;

/**
 * `alreadyHeld`: the holder had the slot before this take (a replacement of its own under way, or a
 * concurrent delivery's take): only a slot a pass took itself is the pass's to give back.
 */
export type SlotGrant =
  | { granted: true; alreadyHeld?: true }
  | { granted: false; inUse: number; limit: number };

export interface SlotChange<T> {
  result: T;
  /** The slots to store, or null when nothing changed (no write). */
  next: ReplacementSlot[] | null;
}

const same = (a: SlotHolder, b: SlotHolder) => a.proxy === b.proxy && a.uid === b.uid;

export const isStale = (slot: ReplacementSlot, now: Date, policy: SlotPolicy): boolean =>
  now.getTime() - slot.takenAt.getTime() >= policy.staleAfterMs;

/**
 * Takes a slot for `holder`. A holder that already has one keeps it (its takenAt unchanged, so a
 * replacement stuck in a loop still times out); stale slots are dropped first, so their room is free.
 * `takeId` names this take (one id for every run of its transaction): a slot this very take staged — its
 * commit landed, its answer was lost, and the client ran the transaction again — is granted as taken, not
 * `alreadyHeld`. Read as held, the pass took it for a replacement already under way and never gave it back
 * when its plan changed: one of RECONCILE_MAX_REPLACING held for REPLACEMENT_SLOT_STALE_MS.
 */
export function takeSlot(
  slots: readonly ReplacementSlot[],
  holder: SlotHolder,
  now: Date,
  policy: SlotPolicy,
  takeId?: string,
): SlotChange<SlotGrant> {
  if (policy.limit === 0) return { result: { granted: true }, next: null };
  const live = slots.filter((s) => !isStale(s, now, policy));
  const reclaimed = live.length !== slots.length;
  const held = live.find((s) => same(s, holder));
  if (held) {
    const own = takeId !== undefined && held.takeId === takeId;
    return {
      result: own ? { granted: true } : { granted: true, alreadyHeld: true },
      next: reclaimed ? live : null,
    };
  }
  if (live.length >= policy.limit) {
    return {
      result: { granted: false, inUse: live.length, limit: policy.limit },
      next: reclaimed ? live : null,
    };
  }
  return {
    result: { granted: true },
    next: [...live, { ...holder, takenAt: now, ...(takeId === undefined ? {} : { takeId }) }],
  };
}

/** Releases `holder`'s slot; releasing one it does not hold changes nothing. */
export function releaseSlot(slots: readonly ReplacementSlot[], holder: SlotHolder): SlotChange<boolean> {
  const rest = slots.filter((s) => !same(s, holder));
  return rest.length === slots.length ? { result: false, next: null } : { result: true, next: rest };
}
