// The replacement slots (domain/reconcile/replacement-slots.ts): the reconcile pass takes one right before
// it deletes a serving instance for a stale hash (a delete on a slot already held marks it: restamp), and
// releases it when it records the new instance healthy (the probe's verdict about it), or when the proxy's
// document goes. Take, restamp and release are idempotent and transactional.
import type { SlotGrant, SlotHolder, TakeIntent } from '../domain/reconcile/replacement-slots.js';

export interface ReplacementSlots {
  /** Grants a slot (or confirms the one `holder` already has), or says none is free (takeSlot). */
  take(holder: SlotHolder, intent?: TakeIntent): Promise<SlotGrant>;
  /** Records what the slot `holder` holds now replaces (restampSlot); false when it holds none. */
  restamp(holder: SlotHolder, replacing: string): Promise<boolean>;
  /**
   * Frees `holder`'s slot if it has one; true when it had. `proven`: freed by a Healthy verdict about the
   * instance with that health key, which keeps a slot taken to replace that very instance (releaseSlot).
   */
  release(holder: SlotHolder, proven?: string): Promise<boolean>;
}
