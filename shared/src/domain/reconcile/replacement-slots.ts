// The fleet-wide cap on concurrent replacements (docs/gc-and-rotation.md § Rolling replacement): at most
// `limit` managed proxies may be between "old instance deleted for a stale hash" and "new instance with the
// current hash found healthy". Pure slot arithmetic over the one small document that holds the slots; the
// adapter runs it inside a transaction (adapters/firestore/replacement-slots.ts), so taking, restamping and
// releasing are idempotent and a proxy holds at most one slot however many deliveries race for it.

/** Who holds a slot: the proxy and its uid (a proxy deleted and re-created under its name is another one). */
export interface SlotHolder {
  proxy: string;
  uid: string;
}

export interface ReplacementSlot extends SlotHolder {
  takenAt: Date;
  /** The take that staged it (absent on a slot stored before takes were named). */
  takeId?: string;
  /**
   * The instance the slot was taken to replace: its health key (health/instance-key.ts) when the take
   * was made, or when a delete of a later instance was made on the slot the proxy already held. Only a
   * Healthy verdict about another instance frees the slot (releaseSlot `proven`). Absent on a slot stored
   * before it was recorded; '' when that instance had no key.
   */
  replacing?: string;
}

/** What a take is for: deleting the instance whose health key is `replacing`. */
export interface TakeIntent {
  replacing: string;
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
  intent?: TakeIntent,
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
    next: [
      ...live,
      {
        ...holder,
        takenAt: now,
        ...(takeId === undefined ? {} : { takeId }),
        ...(intent === undefined ? {} : { replacing: intent.replacing }),
      },
    ],
  };
}

/**
 * Records on the slot `holder` holds that it now replaces the instance `replacing`: a delete of a later
 * instance was made on it (a replacement right after a replacement). Not made at the take, which a cached
 * plan may make for a new VM it mistakes for an old one — and a slot marked for that VM would never be
 * freed by its Healthy verdict. A holder without a slot (freed meanwhile) gets none: false.
 */
export function restampSlot(
  slots: readonly ReplacementSlot[],
  holder: SlotHolder,
  replacing: string,
): SlotChange<boolean> {
  const held = slots.find((s) => same(s, holder));
  if (!held) return { result: false, next: null };
  if (held.replacing === replacing) return { result: true, next: null };
  return { result: true, next: slots.map((s) => (s === held ? { ...s, replacing } : s)) };
}

/**
 * Releases `holder`'s slot; releasing one it does not hold changes nothing. `proven`: the release is a
 * Healthy verdict about the instance with that health key, which ends a replacement only if it is not the
 * instance the slot is replacing — a verdict about the old instance (it recovered just as a rotation
 * deleted it), read by a pass that raced the one that took the slot, freed the replacement's slot and let
 * one more start past the cap.
 */
export function releaseSlot(
  slots: readonly ReplacementSlot[],
  holder: SlotHolder,
  proven?: string,
): SlotChange<boolean> {
  const held = slots.find((s) => same(s, holder));
  if (!held) return { result: false, next: null };
  if (proven !== undefined && proven !== '' && held.replacing === proven)
    return { result: false, next: null };
  return { result: true, next: slots.filter((s) => s !== held) };
}
