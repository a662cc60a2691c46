// proxyplane_leases_active is an aggregation query billed per count, and any crawler token may scrape
// /metrics at any rate: the count must be bounded by time, not by the scrape rate.
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { LEASES_ACTIVE_MAX_AGE_MS, promLeaseMetrics } from './metrics.js';

/** A count port that answers when told to, counting the queries it was asked. */
function fakeCount() {
  const port = {
    calls: 0,
    pending: [] as Array<{ resolve: (n: number) => void; reject: (e: Error) => void }>,
    count: () => {
      port.calls++;
      return new Promise<number>((resolve, reject) => port.pending.push({ resolve, reject }));
    },
  };
  return port;
}

const gauge = (text: string) => /^proxyplane_leases_active (\S+)$/m.exec(text)?.[1];
const tick = () => new Promise((r) => setImmediate(r));

function setUp() {
  const registry = new Registry();
  const port = fakeCount();
  const errors: unknown[] = [];
  const clock = { now: 1_000_000 };
  promLeaseMetrics(registry, port.count, { nowMs: () => clock.now, onError: (e) => errors.push(e) });
  return { registry, port, errors, clock };
}

describe('proxyplane_leases_active', () => {
  it('scrapes inside the interval share one count; one past it counts again', async () => {
    const { registry, port, clock } = setUp();
    const first = registry.metrics();
    await tick();
    port.pending.shift()!.resolve(3);
    expect(gauge(await first)).toBe('3');

    const start = clock.now;
    for (let i = 1; i <= 20; i++) {
      clock.now = start + Math.floor(((LEASES_ACTIVE_MAX_AGE_MS - 1) * i) / 20);
      expect(gauge(await registry.metrics())).toBe('3');
    }
    expect(port.calls).toBe(1);

    clock.now = start + LEASES_ACTIVE_MAX_AGE_MS;
    const next = registry.metrics();
    await tick();
    expect(port.calls).toBe(2);
    port.pending.shift()!.resolve(5);
    expect(gauge(await next)).toBe('5');
  });

  it('scrapes while a count runs wait on it: one query in flight, all see its value', async () => {
    const { registry, port, clock } = setUp();
    const a = registry.metrics();
    clock.now += LEASES_ACTIVE_MAX_AGE_MS * 2; // even past the interval, the running count is the one
    const b = registry.metrics();
    await tick();
    expect(port.calls).toBe(1);
    port.pending.shift()!.resolve(7);
    expect((await Promise.all([a, b])).map(gauge)).toEqual(['7', '7']);
  });

  it('a failed count keeps the last value, is logged once, and is not retried inside the interval', async () => {
    const { registry, port, errors, clock } = setUp();
    const first = registry.metrics();
    await tick();
    port.pending.shift()!.resolve(4);
    await first;

    clock.now += LEASES_ACTIVE_MAX_AGE_MS;
    const a = registry.metrics();
    const b = registry.metrics();
    await tick();
    port.pending.shift()!.reject(new Error('firestore down'));
    expect((await Promise.all([a, b])).map(gauge)).toEqual(['4', '4']);
    expect(errors).toHaveLength(1);

    clock.now += LEASES_ACTIVE_MAX_AGE_MS - 1;
    expect(gauge(await registry.metrics())).toBe('4');
    expect(port.calls).toBe(2);
    expect(errors).toHaveLength(1);
  });
});
