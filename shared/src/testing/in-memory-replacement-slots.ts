// ReplacementSlots in memory, for pure unit tests only: the same slot arithmetic the Firestore adapter runs
// in a transaction, over an array.
import {
  REPLACEMENT_SLOT_STALE_MS,
  type ReplacementSlot,
  releaseSlot,
  restampSlot,
  type SlotGrant,
  type SlotHolder,
  type SlotPolicy,
  type TakeIntent,
  takeSlot,
} from '../domain/reconcile/replacement-slots.js';
import { type Clock, systemClock } from '../ports/clock.js';
import type { ReplacementSlots } from '../ports/replacement-slots.js';

export class InMemoryReplacementSlots implements ReplacementSlots {
  slots: ReplacementSlot[] = [];
  readonly policy: SlotPolicy;
  constructor(
    limit = 0,
    private readonly clock: Clock = systemClock,
    staleAfterMs = REPLACEMENT_SLOT_STALE_MS,
  ) {
    this.policy = { limit, staleAfterMs };
  }

  async take(holder: SlotHolder, intent?: TakeIntent): Promise<SlotGrant> {
    const { result, next } = takeSlot(this.slots, holder, this.clock.now(), this.policy, undefined, intent);
    if (next) this.slots = next;
    return result;
  }

  async restamp(holder: SlotHolder, replacing: string): Promise<boolean> {
    const { result, next } = restampSlot(this.slots, holder, replacing);
    if (next) this.slots = next;
    return result;
  }

  async release(holder: SlotHolder, proven?: string): Promise<boolean> {
    const { result, next } = releaseSlot(this.slots, holder, proven);
    if (next) this.slots = next;
    return result;
  }
}
