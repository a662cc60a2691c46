// How V8 marks the old generation in this process: "atomic" (the default) turns incremental marking off,
// "incremental" leaves V8's default. Measured on bench/gateway.ts (docs/gateway.md § Performance):
// relaying a long tunnel, each socket read is a fresh 64 KiB buffer, and with incremental marking V8
// started old-generation marking again right after each mark-compact — one every 50–100 ms, 30 per
// 900 MiB relayed, on a 13 MB heap that barely grew — at 1.5–2× the CPU per byte of a bare Node pipe,
// which never leaves its start-up heap limits. With marking atomic, a full GC runs only when the old
// generation reaches its limit: one in the same 900 MiB, and less CPU per CONNECT and per plain-HTTP
// request too. The cost is a longer pause per full GC, the whole marking at once: 12–32 ms on the
// ~90 MB heap of a 20,000-upstream snapshot under load, against 2–16 ms of final pause (plus the
// marking steps spread between requests) with incremental marking. A fleet whose snapshots make the
// heap much larger than that may prefer "incremental".
import { setFlagsFromString } from 'node:v8';

export const GC_MARKING_MODES = ['atomic', 'incremental'] as const;
export type GcMarking = (typeof GC_MARKING_MODES)[number];

/** The V8 flag for a mode; V8 reads it whenever it would start marking, so setting it at start-up is enough. */
export const gcMarkingFlag = (mode: GcMarking): string =>
  mode === 'atomic' ? '--no-incremental-marking' : '--incremental-marking';

export function applyGcMarking(mode: GcMarking, set: (flag: string) => void = setFlagsFromString): void {
  set(gcMarkingFlag(mode));
}
