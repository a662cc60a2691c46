// Polling for tests. Every wait here throws at its deadline: a wait that hands back its last value on
// timeout (bench/support/gateway-process.ts `eventually`, built for benchmarks) lets a test carry on from a
// state it never reached, and an assertion nobody wrote after the wait then passes on nothing.
import { setTimeout as sleep } from 'node:timers/promises';

/** Reads until `check` passes and returns that value; throws (with the last value) after `timeoutMs`. */
export async function pollUntil<T>(
  read: () => Promise<T> | T,
  check: (v: T) => boolean,
  timeoutMs: number,
  what: string,
  everyMs = 50,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await read();
    if (check(v)) return v;
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}; last value: ${show(v)}`);
    }
    await sleep(everyMs);
  }
}

/**
 * Reads until the value (compared as JSON) has stayed the same for `quietMs` and returns it; throws after
 * `timeoutMs`. For "let the background work settle" before a before/after comparison, instead of a fixed
 * sleep that a loaded machine outlasts.
 */
export async function untilStable<T>(
  read: () => Promise<T> | T,
  o: { quietMs: number; timeoutMs: number; what: string; everyMs?: number },
): Promise<T> {
  const deadline = Date.now() + o.timeoutMs;
  let last = await read();
  let since = Date.now();
  for (;;) {
    await sleep(o.everyMs ?? 100);
    const v = await read();
    const now = Date.now();
    if (show(v) !== show(last)) {
      last = v;
      since = now;
    } else if (now - since >= o.quietMs) {
      return v;
    }
    if (now > deadline) {
      throw new Error(
        `timed out after ${o.timeoutMs} ms waiting for ${o.what} to stay unchanged for ${o.quietMs} ms; last value: ${show(v)}`,
      );
    }
  }
}

function show(v: unknown): string {
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return String(v);
  }
}
