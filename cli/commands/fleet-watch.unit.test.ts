import { describe, expect, it } from 'vitest';
import type { FleetView } from '../../functions/api/src/fleet/view-model.js';
import type { Io } from '../context.js';
import { runCli } from '../run.js';

const view: FleetView = {
  rows: [],
  phases: {},
  generatedAt: '2026-02-01T12:00:00.000Z',
} as unknown as FleetView;

/** runCli with an Io that records sleeps instead of waiting, and a fetch that counts the API calls. */
async function watch(args: string[]) {
  const sleeps: number[] = [];
  const err: string[] = [];
  let calls = 0;
  const io: Io = {
    out: () => {},
    err: (t) => err.push(t),
    isTTY: false,
    columns: 120,
    readStdin: async () => '',
    readFile: async () => '',
    now: () => new Date('2026-02-01T12:00:00Z'),
    sleep: async (ms) => {
      sleeps.push(ms);
    },
    interrupted: new AbortController().signal,
  };
  const fetch = (async () => {
    calls++;
    return new Response(JSON.stringify(view), { headers: { 'content-type': 'application/json' } });
  }) as typeof globalThis.fetch;
  const code = await runCli(['fleet', 'watch', '--api', 'http://127.0.0.1:9', ...args], {
    io,
    env: {},
    tokens: { env: {}, localState: () => null, gcloudToken: () => null },
    fetch,
  });
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
