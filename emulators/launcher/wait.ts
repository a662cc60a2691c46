// Bounded readiness polling for local HTTP servers.
import { setTimeout as sleep } from 'node:timers/promises';

export async function waitForHttp(url: string, { timeoutMs = 60_000, intervalMs = 100 } = {}): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(2000) });
      await res.body?.cancel();
      if (res.status < 500) return;
      last = new Error(`HTTP ${res.status}`);
    } catch (err) {
      last = err;
    }
    await sleep(intervalMs);
  }
  throw new Error(`${url} not ready after ${timeoutMs} ms: ${String(last)}`);
}
