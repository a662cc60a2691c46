// How V8 marks the old generation in this process. "atomic" turns incremental marking off: relaying
// CONNECT tunnels, V8's incremental marking restarted right after each mark-compact, a full GC every
// few tens of MiB on a heap that barely grew, and with it off the proxy listener spends markedly less
// CPU per byte and per request — at the price of a longer pause per full GC, the whole marking at once.
// On the fetch endpoint it bought nothing and cost CPU per small request. So "auto" (the default) is
// atomic where the proxy listener runs and incremental where only the fetch endpoint does (Cloud Run).
// The measurements: docs/gateway.md § Performance, § GC marking.
import { setFlagsFromString } from 'node:v8';

export const GC_MARKING_SETTINGS = ['auto', 'atomic', 'incremental'] as const;
export type GcMarkingSetting = (typeof GC_MARKING_SETTINGS)[number];
export type GcMarking = Exclude<GcMarkingSetting, 'auto'>;

export const gcMarkingFor = (setting: GcMarkingSetting, proxyListener: boolean): GcMarking =>
  setting === 'auto' ? (proxyListener ? 'atomic' : 'incremental') : setting;

/** V8 reads the flag whenever it would start marking, so setting it once at start-up is enough. */
export function applyGcMarking(mode: GcMarking, set: (flag: string) => void = setFlagsFromString): void {
  set(mode === 'atomic' ? '--no-incremental-marking' : '--incremental-marking');
}
