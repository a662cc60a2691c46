import { describe, expect, it } from 'vitest';
import type { FleetRow, FleetView } from '../../functions/api/src/fleet/view-model.js';
import { runCli } from '../run.js';
import { cliDeps, recordingIo } from '../testing.js';
import { fleetTable } from './fleet-watch.js';

const view: FleetView = {
  rows: [],
  phases: {},
  generatedAt: '2026-02-01T12:00:00.000Z',
} as unknown as FleetView;

/** runCli with an Io that records sleeps instead of waiting, and a fetch that counts the API calls. */
async function watch(args: string[]) {
  const io = recordingIo();
  const { sleeps, errLines: err } = io;
  let calls = 0;
  const fetch = (async () => {
    calls++;
    return new Response(JSON.stringify(view), { headers: { 'content-type': 'application/json' } });
  }) as typeof globalThis.fetch;
  const code = await runCli(['fleet', 'watch', '--api', 'http://127.0.0.1:9', ...args], cliDeps(io, fetch));
  return { code, sleeps, err, calls };
}

describe('fleet watch bounds', () => {
  it('waits --interval seconds between rounds, up to an hour', async () => {
    expect(await watch(['--count', '3', '--interval', '3600'])).toMatchObject({
      code: 0,
      sleeps: [3_600_000, 3_600_000],
      calls: 3,
    });
  });

  // Node's timers take at most 2^31-1 ms (~24.8 days): a longer delay fires after 1 ms, so
  // `--interval 2147484` would poll the API in a tight loop.
  it.each([
    [['--interval', '3601'], /^error: usage — --interval must be an integer from 1 to 3600, got "3601"/],
    [['--interval', '2147484'], /^error: usage — --interval must be an integer from 1 to 3600/],
    [['--interval', '99999999999999999999'], /^error: usage — --interval must be an integer from 1 to 3600/],
    [['--count', '86401'], /^error: usage — --count must be an integer from 1 to 86400, got "86401"/],
  ])('%j is a usage error (exit 2) and calls nothing', async (args, message) => {
    const r = await watch(args);
    expect(r).toMatchObject({ code: 2, calls: 0, sleeps: [] });
    expect(r.err[0]).toMatch(message);
  });
});

describe('fleet watch table', () => {
  const row = (name: string, extra: Partial<FleetRow>): FleetRow => ({
    name,
    mode: 'managed',
    location: 'us-central1-a',
    attributes: {},
    phase: 'Ready',
    deleting: false,
    ip: '203.0.113.7',
    healthy: true,
    verdict: 'AVAILABLE',
    tiers: { BASIC: 'AVAILABLE', EGRESS: 'AVAILABLE' },
    egressProblem: null,
    latencyMillis: 20,
    latencyHistory: [],
    capacity: 4,
    activeLeases: 0,
    cooldowns: [],
    owner: null,
    unreachableRoutes: [],
    createdAt: '2026-02-01T11:00:00.000Z',
    changedAt: '2026-02-01T11:59:00.000Z',
    ...extra,
  });

  // The page's gateway cell (page.ts): owner, "(draining)" while it hands the proxy over, and the routes
  // whose target check fails through it — the terminal view said only the owner.
  it('shows what the page shows in the gateway column', () => {
    const v = {
      ...view,
      rows: [
        row('p1', { owner: { owner: 'gw-a', since: 1, drainEpoch: null } }),
        row('p2', { owner: { owner: 'gw-b', since: 1, drainEpoch: 3 }, unreachableRoutes: ['shop', 'news'] }),
        row('p3', { unreachableRoutes: ['shop'] }),
      ],
    } as FleetView;
    const lines = fleetTable(v, new Date('2026-02-01T12:00:00Z'), 10).split('\n');
    const cell = (name: string) => lines.find((l) => l.startsWith(`${name} `)) ?? '';
    expect(cell('p1')).toMatch(/ gw-a {2}/);
    expect(cell('p1')).not.toContain('draining');
    expect(cell('p2')).toContain('gw-b (draining) not for shop, news');
    expect(cell('p3')).toContain('- not for shop');
  });
});
