// What a runtime report carries when the gateway has more non-zero counts than the controller takes
// (limits.maxCounts): a report is a complete replacement, so whatever is cut reads as zero — for a proxy
// being drained away, as drained, and its ownership would move while its tunnels still run here.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { jsonLogger } from '../logger.js';
import type { ProxyRuntimeCount } from '../worker.js';
import { FakeClient, FakeFeed, feedMessage, snapshot, T0, testSession, testWorker } from './fakes.js';
import { drainingCut, reportedCounts } from './reporting.js';

const count = (proxy: string, draining: boolean, active = 1): ProxyRuntimeCount => ({
  proxy,
  active,
  reserved: 0,
  draining,
});

describe('reportedCounts', () => {
  it.each<[string, ProxyRuntimeCount[], number, string[]]>([
    ['under the limit: all, in order', [count('a', false), count('b', true)], 5, ['a', 'b']],
    [
      'over the limit: the draining ones are kept first',
      [count('a', false), count('b', false), count('c', true), count('d', true)],
      2,
      ['c', 'd'],
    ],
    [
      'over the limit: then the owned ones',
      [count('a', false), count('b', true), count('c', false)],
      2,
      ['b', 'a'],
    ],
    [
      'over the limit: the busiest owned ones first (a cut one looks idle, its capacity leased again)',
      [count('a', false, 1), count('b', false, 5), count('c', true, 1), count('d', false, 3)],
      3,
      ['c', 'b', 'd'],
    ],
    [
      'more draining ones than the limit: the busiest draining ones (a cut one reads as drained)',
      [count('a', true, 1), count('b', false, 9), count('c', true, 7), count('d', true, 2)],
      2,
      ['c', 'd'],
    ],
    ['exactly the limit: all, in order', [count('a', false), count('b', true)], 2, ['a', 'b']],
  ])('%s', (_name, all, max, expected) => {
    expect(reportedCounts(all, max).map((c) => c.proxy)).toEqual(expected);
  });

  it('reserved counts weigh as active ones', () => {
    const reserved = { proxy: 'r', active: 0, reserved: 4, draining: false };
    expect(reportedCounts([count('a', false, 2), reserved], 1).map((c) => c.proxy)).toEqual(['r']);
  });

  it('counts the draining proxies a cut leaves out', () => {
    const all = [count('a', true), count('b', true), count('c', false)];
    expect([drainingCut(all, 3), drainingCut(all, 2), drainingCut(all, 1)]).toEqual([0, 0, 1]);
  });

  it('caps counts at the wire schema’s 1,000,000 and leaves out the draining flag', () => {
    expect(reportedCounts([count('a', true, 5_000_000)], 1)).toEqual([
      { proxy: 'a', active: 1_000_000, reserved: 0 },
    ]);
  });
});

describe('the revocations a runtime report answer carries', () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: T0 });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  /** A session bound to snapshot 1 whose first runtime report is answered with `revoked`. */
  async function answered(revoked: string[]) {
    const client = new FakeClient();
    const feed = new FakeFeed();
    const lines: Array<Record<string, unknown>> = [];
    const log = jsonLogger('debug', (l) => lines.push(JSON.parse(l) as Record<string, unknown>));
    const worker = testWorker(log);
    const session = testSession({ client, feed, log });
    client.scripts.runtime.push({
      ok: true,
      body: { acceptedSequence: 1, replay: false, revokeProxyIds: revoked, reportTtlSeconds: 15 },
    });
    session.source.start(worker).catch(() => {});
    session.reporter.start(worker);
    await vi.advanceTimersByTimeAsync(0);
    await feed.deliver(feedMessage(snapshot(1, ['p-a', 'p-b'])));
    await vi.advanceTimersByTimeAsync(0);
    expect(client.of('runtime')).toHaveLength(1);
    return lines.filter((l) => l.message === 'proxies revoked by the controller');
  }

  it("are logged as their count and the first 100 ids: a worker's whole share fits one entry", async () => {
    const ids = Array.from({ length: 10_000 }, (_, i) => `proxy-${String(i).padStart(5, '0')}`);
    const [line, ...more] = await answered(ids);
    expect(more).toEqual([]);
    expect(line).toMatchObject({ count: 10_000, proxies: ids.slice(0, 100), truncated: true });
    expect(JSON.stringify(line).length).toBeLessThan(32 * 1024);
  });

  it('a few are listed whole, with their count', async () => {
    const [line] = await answered(['p-a']);
    expect(line).toMatchObject({ count: 1, proxies: ['p-a'] });
    expect(line).not.toHaveProperty('truncated');
  });
});
