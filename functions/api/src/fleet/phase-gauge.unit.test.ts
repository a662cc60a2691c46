// Review (session 8): the 10 s reuse of the phase count under two scrapes at once, and a failed count.
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import type { Phase } from '../../../../shared/src/domain/proxy.js';
import { promProxyPhaseGauge } from './phase-gauge.js';

const counts = (ready: number) => ({ Ready: ready }) as unknown as Record<Phase, number>;

describe('promProxyPhaseGauge reuse', () => {
  it('two scrapes at once share one count; a failed one is shared, logged once, and waits out maxAge too', async () => {
    const registry = new Registry();
    const errors: unknown[] = [];
    const unhandled: unknown[] = [];
    const onUnhandled = (e: unknown) => unhandled.push(e);
    process.on('unhandledRejection', onUnhandled);
    let calls = 0;
    let settle: (v: Record<Phase, number>) => void = () => {};
    let fail: (e: Error) => void = () => {};
    promProxyPhaseGauge(
      registry,
      () => {
        calls++;
        return new Promise((res, rej) => {
          settle = res;
          fail = rej;
        });
      },
      { maxAgeMs: 10_000, nowMs: () => 0, onError: (e) => errors.push(e) },
    );
    const a = registry.metrics();
    const b = registry.metrics();
    await new Promise((r) => setImmediate(r));
    expect(calls).toBe(1);
    settle(counts(3));
    for (const m of await Promise.all([a, b])) expect(m).toContain('proxyplane_proxies{phase="Ready"} 3');

    // Past maxAge: both scrapes wait on one count that fails; it is logged once, the last values stay, and
    // the next count waits out maxAge too (a Firestore outage is no reason to ask on every scrape).
    const later = new Registry();
    let now = 0;
    calls = 0;
    promProxyPhaseGauge(
      later,
      () => {
        calls++;
        return new Promise((res, rej) => {
          settle = res;
          fail = rej;
        });
      },
      { maxAgeMs: 10_000, nowMs: () => now, onError: (e) => errors.push(e) },
    );
    errors.length = 0;
    const first = later.metrics();
    await new Promise((r) => setImmediate(r));
    settle(counts(2));
    expect(await first).toContain('proxyplane_proxies{phase="Ready"} 2');
    now = 10_000;
    const c = later.metrics();
    const d = later.metrics();
    await new Promise((r) => setImmediate(r));
    expect(calls).toBe(2);
    fail(new Error('firestore down'));
    for (const m of await Promise.all([c, d])) expect(m).toContain('proxyplane_proxies{phase="Ready"} 2');
    expect(errors).toHaveLength(1);
    now = 19_999;
    expect(await later.metrics()).toContain('proxyplane_proxies{phase="Ready"} 2');
    expect(calls).toBe(2);
    now = 20_000;
    const e = later.metrics();
    await new Promise((r) => setImmediate(r));
    expect(calls).toBe(3);
    settle(counts(4));
    expect(await e).toContain('proxyplane_proxies{phase="Ready"} 4');
    await new Promise((r) => setTimeout(r, 20));
    process.off('unhandledRejection', onUnhandled);
    expect(unhandled).toEqual([]);
  });
});
