// How V8 marks the old generation in this process: "atomic" (the default) turns incremental marking off.
// Relaying CONNECT tunnels and fetch bodies, V8's incremental marking restarted right after each
// mark-compact — a full GC every few tens of MiB on a heap that barely grew — and with it off the gateway
// spends markedly less CPU per byte and per request on both listeners, at the price of a longer pause per
// full GC (the whole marking at once). The measurements: docs/gateway.md § Performance, § GC marking.
import { setFlagsFromString } from 'node:v8';

export const GC_MARKING_MODES = ['atomic', 'incremental'] as const;
export type GcMarking = (typeof GC_MARKING_MODES)[number];

/** V8 reads the flag whenever it would start marking, so setting it once at start-up is enough. */
export function applyGcMarking(mode: GcMarking, set: (flag: string) => void = setFlagsFromString): void {
  set(mode === 'atomic' ? '--no-incremental-marking' : '--incremental-marking');
}
