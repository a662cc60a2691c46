import { describe, expect, it } from 'vitest';
import type { FleetRow, FleetView } from '../../functions/api/src/fleet/view-model.js';
import { runCli } from '../run.js';
import { cliDeps, recordingIo } from '../testing.js';
import { fittedFrame, fleetTable, type Screen, screenLines } from './fleet-watch.js';

const view: FleetView = {
  rows: [],
  phases: {},
  jobs: [],
  generatedAt: '2026-02-01T12:00:00.000Z',
};

/** runCli with an Io that records sleeps instead of waiting, and a fetch that counts the API calls. */
async function watch(args: string[], answer: string = JSON.stringify(view), isTTY = false) {
  const io = { ...recordingIo(), isTTY };
  const { sleeps, errLines: err, outLines: out, clears } = io;
  let calls = 0;
  const fetch = (async () => {
    calls++;
    return new Response(answer, { headers: { 'content-type': 'application/json' } });
  }) as typeof globalThis.fetch;
  const code = await runCli(['fleet', 'watch', '--api', 'http://127.0.0.1:9', ...args], cliDeps(io, fetch));
  return { code, sleeps, err, out, calls, clears };
}

/** A row of the fleet state as the API answers it, with `extra` over a Ready, healthy one. */
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

  it('says when a proxy is cordoned, beside its phase', () => {
    const v = { ...view, rows: [row('p1', { cordoned: true }), row('p2', {})] };
    const lines = fleetTable(v, new Date('2026-02-01T12:00:00Z'), 10).split('\n');
    expect(lines.find((l) => l.startsWith('p1 '))).toContain('Ready (cordoned)');
    expect(lines.find((l) => l.startsWith('p2 '))).not.toContain('cordoned');
  });

  it('says when a proxy counts as full because its lease state does not decode', () => {
    const v = { ...view, rows: [row('p1', { activeLeases: 4, leaseStateInvalid: true }), row('p2', {})] };
    const lines = fleetTable(v, new Date('2026-02-01T12:00:00Z'), 10).split('\n');
    expect(lines.find((l) => l.startsWith('p1 '))).toContain(' 4/4 (invalid state) ');
    expect(lines.find((l) => l.startsWith('p2 '))).not.toContain('invalid');
  });
});

describe('fleet watch reads only what fits the fleet state schema', () => {
  const good = {
    name: 'p1',
    mode: 'managed',
    location: 'us-central1-a',
    attributes: {},
    phase: 'Ready',
    deleting: false,
    ip: null,
    healthy: true,
    verdict: 'AVAILABLE',
    tiers: { BASIC: 'AVAILABLE' },
    egressProblem: null,
    latencyMillis: 20,
    latencyHistory: [],
    capacity: 4,
    activeLeases: 1,
    cooldowns: [],
    owner: null,
    unreachableRoutes: [],
    createdAt: '2026-02-01T11:00:00.000Z',
    changedAt: '2026-02-01T11:59:00.000Z',
  };

  it('prints the table of an answer that fits, fields of a newer API kept in -o json', async () => {
    const answer = JSON.stringify({ ...view, rows: [{ ...good, future: 1 }], newer: true });
    const table = await watch(['--once'], answer);
    expect(table).toMatchObject({ code: 0, err: [] });
    expect(table.out.join('\n')).toMatch(/^p1 +Ready +AVAILABLE\/- +20ms +1\/4 /m);
    const json = await watch(['--once', '-o', 'json'], answer);
    expect(json).toMatchObject({ code: 0, out: [answer] });
  });

  // An older CLI against a newer API: one row in a phase (verdict, mode) this CLI does not know failed the
  // whole answer, exit 1, although what a newer API adds is no misfit (docs/cli.md § fleet watch).
  it('shows a row in a phase, verdict or mode this CLI does not know, as the API says it', async () => {
    const newer = {
      ...good,
      name: 'p2',
      phase: 'Draining',
      mode: 'pooled',
      verdict: 'DEGRADED',
      tiers: { BASIC: 'DEGRADED', EGRESS: 'AVAILABLE' },
    };
    const answer = JSON.stringify({ ...view, rows: [good, newer], phases: { Ready: 1, Draining: 1 } });
    const r = await watch(['--once'], answer);
    expect(r).toMatchObject({ code: 0, err: [] });
    const out = r.out.join('\n');
    expect(out).toMatch(/^2 proxies \(1 Ready, 1 Draining\) at /);
    expect(out).toMatch(/^p1 +Ready +AVAILABLE\/- +20ms +1\/4 /m);
    expect(out).toMatch(/^p2 +Draining +DEGRADED\/AVAILABLE +20ms +1\/4 /m);
  });

  it.each([
    [
      'a row of another shape',
      JSON.stringify({ ...view, rows: [{ ...good, capacity: 'four', phase: 7 }] }),
      ['  rows.0.phase: ', '  rows.0.capacity: '],
    ],
    [
      'no rows at all',
      JSON.stringify({ generatedAt: view.generatedAt }),
      ['  rows: ', '  phases: ', '  jobs: '],
    ],
  ])('%s: error bad_response with the issues, exit 1, nothing printed', async (_, answer, paths) => {
    for (const output of [[], ['-o', 'json']]) {
      const r = await watch(['--count', '3', ...output], answer);
      expect(r).toMatchObject({ code: 1, out: [], calls: 1 });
      expect(r.err[0]).toMatch(/^error: bad_response — the API's answer to GET \/fleet\/api\/state is not/);
      for (const p of paths) expect(r.err.some((l) => l.startsWith(p))).toBe(true);
    }
  });

  // A sign-in page or a proxy's answer in the API's stead: http.ts refuses a 2xx body that is not JSON.
  it('no JSON: error bad_response, exit 1, nothing printed', async () => {
    for (const output of [[], ['-o', 'json']]) {
      const r = await watch(['--count', '3', ...output], '<html>sign in</html>');
      expect(r).toMatchObject({ code: 1, out: [], calls: 1 });
      expect(r.err[0]).toMatch(
        /^error: bad_response — the API answered HTTP 200 with a body that is not JSON/,
      );
    }
  });

  it('lists ten issues at most', async () => {
    const rows = Array.from({ length: 12 }, (_, i) => ({ ...good, name: `p${i}`, capacity: 'x' }));
    const r = await watch(['--once'], JSON.stringify({ ...view, rows }));
    expect(r.code).toBe(1);
    expect(r.err.slice(1)).toHaveLength(11);
    expect(r.err.at(-1)).toBe('  … 2 more');
  });
});

// A row's attributes, phases and routes are strings the API passes on: shown escaped, never sent raw to
// the terminal — whose screen the watch itself clears each round, and only through Io.clearScreen.
describe('fleet watch and control characters', () => {
  const hostile = 'demo\u001b[2J\u001b]0;pwned\u0007\u009b31m\u007f';
  // biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is its purpose
  const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
  const answer = JSON.stringify({
    ...view,
    rows: [row('p1', { attributes: { label: hostile }, unreachableRoutes: [hostile] })],
  });
  const lines = (printed: string[]) => printed.flatMap((t) => t.split('\n'));

  it.each([
    ['--once', ['--once'], false],
    ['redrawn on a terminal', ['--count', '2'], true],
    ['-o json', ['--once', '-o', 'json'], false],
  ])('%s: no line holds one', async (_, args, isTTY) => {
    const r = await watch(args, answer, isTTY);
    expect(r.err).toEqual([]);
    expect(r.code).toBe(0);
    expect(lines(r.out).filter((l) => CONTROL.test(l))).toEqual([]);
    expect(r.out.join('\n')).toContain('demo\\u001b[2J\\u001b]0;pwned\\u0007\\u009b31m\\u007f');
  });

  it('on a terminal the screen is cleared before each round, not printed as text', async () => {
    const r = await watch(['--count', '2'], answer, true);
    expect(r.clears).toEqual([0, 1]);
    expect(r.out.join('\n')).not.toContain('\\u001b[H');
  });

  it('-o json reads back as the answer sent', async () => {
    const r = await watch(['--once', '-o', 'json'], answer);
    expect(r.out.map((l) => JSON.parse(l))).toEqual([JSON.parse(answer)]);
  });
});

// Ctrl-C was only read between rounds: a round waiting on an API that did not answer kept its 30 s
// timeout, then the watch printed `error: unreachable … (timed out)` and exited 1.
describe('fleet watch and Ctrl-C during a round', () => {
  it('aborts the request in flight and ends at once, exit 0, nothing on stderr', async () => {
    const interrupt = new AbortController();
    const io = { ...recordingIo(), interrupted: interrupt.signal };
    const signals: (AbortSignal | null | undefined)[] = [];
    // Never answers; rejects when its signal aborts, as fetch does.
    const fetch = ((_url: string, init?: RequestInit) => {
      signals.push(init?.signal);
      return new Promise((_resolve, reject) =>
        init?.signal?.addEventListener('abort', () => reject(init.signal?.reason)),
      );
    }) as typeof globalThis.fetch;
    const done = runCli(['fleet', 'watch', '--api', 'http://127.0.0.1:9'], cliDeps(io, fetch));
    await new Promise((r) => setTimeout(r, 20));
    expect(signals).toHaveLength(1);
    interrupt.abort();
    const code = await Promise.race([done, new Promise((r) => setTimeout(() => r('still running'), 1000))]);
    expect(code).toBe(0);
    expect(signals[0]?.aborted).toBe(true);
    expect(io.errLines).toEqual([]);
  });
});

// The redraw cut the table at the terminal's height less 5, but a frame adds 6 lines besides the rows
// (and the cursor's line after it), and a row wider than the terminal wraps onto a second screen line:
// the frame scrolled off its own top every round.
describe('fleet watch on a terminal', () => {
  const rows = Array.from({ length: 40 }, (_, i) =>
    row(`proxy-${i}`, { attributes: { pool: 'residential', region: 'eu-west' } }),
  );
  const answer = JSON.stringify({ ...view, rows });

  async function frame(size: { rows: number; columns: number }) {
    const io = { ...recordingIo(), isTTY: true, terminalSize: () => size };
    const fetch = (async () => Response.json(JSON.parse(answer))) as typeof globalThis.fetch;
    const code = await runCli(
      ['fleet', 'watch', '--count', '1', '--api', 'http://127.0.0.1:9'],
      cliDeps(io, fetch),
    );
    expect(code).toBe(0);
    expect(io.clears).toEqual([0]);
    return io.outLines.join('\n').split('\n');
  }
  const screenLines = (lines: string[], columns: number) =>
    lines.reduce((n, l) => n + Math.max(1, Math.ceil(l.length / columns)), 0);

  it('never takes more screen lines than the terminal has, less the cursor’s, wrapped lines counted', async () => {
    const lines = await frame({ rows: 24, columns: 80 });
    expect(lines.some((l) => l.length > 80)).toBe(true);
    expect(screenLines(lines, 80)).toBeLessThanOrEqual(23);
    expect(lines.filter((l) => l.startsWith('proxy-')).length).toBeGreaterThan(0);
    expect(lines).toContainEqual(expect.stringMatching(/^… \d+ more \(make the terminal taller\)$/));
    expect(lines.at(-1)).toBe('(Ctrl-C to stop)');
  });

  it('shows every row when they fit', async () => {
    const lines = await frame({ rows: 60, columns: 200 });
    expect(lines.filter((l) => l.startsWith('proxy-'))).toHaveLength(40);
    expect(lines.join('\n')).not.toContain('more (make the terminal taller)');
    expect(screenLines(lines, 200)).toBeLessThanOrEqual(59);
  });
});

// A frame was remade for each row count tried, from the screen's height down one at a time, and each
// formatted every row of the fleet: at 10,000 proxies one round took 250–600 ms of a 1 s interval.
describe('fleet watch fitting a frame', () => {
  const now = new Date('2026-02-01T12:00:00Z');
  const fleet = (n: number, formatted?: Map<string, number>): FleetView => ({
    ...view,
    rows: Array.from({ length: n }, (_, i) => {
      const r = row(`proxy-${i}`, { attributes: { pool: 'residential', region: 'eu-west'.repeat(i % 7) } });
      // Each row's location is read once per formatting of it: the count of times it was formatted.
      const { location } = r;
      return Object.defineProperty(r, 'location', {
        get: () => {
          formatted?.set(r.name, (formatted.get(r.name) ?? 0) + 1);
          return location;
        },
      });
    }),
  });

  /** The frame as it was found before: the most rows, from the screen's height down, that fit. */
  function oneAtATime(v: FleetView, screen: Screen): string {
    const frame = (n: number) => `${fleetTable(v, now, n)}\n\n(Ctrl-C to stop)`;
    let n = Math.min(v.rows.length, Math.max(0, screen.rows));
    while (n > 0 && screenLines(frame(n), screen.columns) > screen.rows - 1) n--;
    return frame(n);
  }

  it('formats each row at most once, and only rows the screen could show', () => {
    const formatted = new Map<string, number>();
    const frame = fittedFrame(fleet(10_000, formatted), now, { rows: 50, columns: 80 });
    expect(frame).toContain('more (make the terminal taller)');
    expect([...formatted.values()].every((n) => n === 1)).toBe(true);
    expect(formatted.size).toBeLessThanOrEqual(50);
  });

  it.each([
    [0, { rows: 24, columns: 80 }],
    [3, { rows: 24, columns: 80 }],
    [40, { rows: 24, columns: 80 }],
    [40, { rows: 24, columns: 200 }],
    [40, { rows: 60, columns: 200 }],
    [40, { rows: 60, columns: 120 }],
    [40, { rows: 8, columns: 30 }],
    [40, { rows: 3, columns: 10 }],
    [12, { rows: 14, columns: 130 }],
    [12, { rows: 0, columns: 80 }],
  ])('%i rows on %j: the frame found one row at a time', (n, screen) => {
    for (let rows = Math.max(0, n - 4); rows <= n; rows++)
      expect(fittedFrame(fleet(rows), now, screen)).toBe(oneAtATime(fleet(rows), screen));
  });
});

// A gcloud identity token lives an hour, and the watch runs until Ctrl-C (up to a day): it sent the token
// it read at start every round, met 401 once it expired, and ended with exit 1 and a hint to log in again.
describe('fleet watch with a gcloud identity token that expires', () => {
  it('asks gcloud again on a 401 and goes on: every round drawn, exit 0', async () => {
    const io = recordingIo();
    let round = 0;
    let minted = 0;
    const refused: string[] = [];
    // gcloud mints a token for the round it is asked in; the API takes one for 3 rounds, then answers 401.
    const gcloudToken = () => `idtoken-${++minted}.${round}`;
    const fetch = (async (_url: string, init?: RequestInit) => {
      const auth = (init?.headers as Record<string, string> | undefined)?.authorization ?? '';
      const mintedAt = Number(auth.split('.').at(-1));
      if (round - mintedAt >= 3) {
        refused.push(auth);
        return Response.json({ error: 'unauthenticated', message: 'token expired' }, { status: 401 });
      }
      round++;
      return Response.json(view);
    }) as unknown as typeof globalThis.fetch;
    const code = await runCli(
      ['fleet', 'watch', '--count', '10', '-o', 'json', '--api', 'https://api.example'],
      {
        ...cliDeps(io, fetch),
        tokens: { env: {}, localState: () => null, gcloudToken },
      },
    );
    expect({ code, err: io.errLines, rounds: io.outLines.length }).toEqual({ code: 0, err: [], rounds: 10 });
    expect(minted).toBeGreaterThan(1);
    expect(refused.length).toBe(minted - 1);
  });
});

// One 502 from the front end, a reset or a 503 without Retry-After ended a watch meant to run until
// Ctrl-C with exit 1. A passing failure is now one line on stderr and the next round goes on; only
// MAX_FAILED_ROUNDS in a row, the last round's, or a failure that will not pass, ends it.
describe('fleet watch and a round that fails', () => {
  /** A watch whose API answers round n (1-based) with `fail(n)`, or the fleet state when it is undefined. */
  async function flaky(args: string[], fail: (n: number) => Response | Error | undefined) {
    const io = recordingIo();
    let calls = 0;
    const fetch = (async () => {
      const f = fail(++calls);
      if (f instanceof Error) throw f;
      return f ?? Response.json(view);
    }) as unknown as typeof globalThis.fetch;
    const code = await runCli(
      ['fleet', 'watch', '-o', 'json', '--api', 'http://127.0.0.1:9', ...args],
      cliDeps(io, fetch),
    );
    return { code, calls, rounds: io.outLines.length, err: io.errLines };
  }
  const status = (s: number) =>
    new Response('<html>Bad Gateway</html>', { status: s, headers: { 'content-type': 'text/html' } });

  it.each([
    ['a front end 502', () => status(502)],
    ['a 503 without Retry-After', () => Response.json({ error: 'unavailable' }, { status: 503 })],
    ['a 429 without Retry-After', () => Response.json({ error: 'rate_limited' }, { status: 429 })],
    ['a reset', () => new TypeError('fetch failed')],
  ])('%s at round 3: said on stderr, the other rounds drawn, exit 0', async (_what, answer) => {
    const r = await flaky(['--count', '10'], (n) => (n === 3 ? answer() : undefined));
    expect(r).toMatchObject({ code: 0, calls: 10, rounds: 9 });
    expect(r.err).toHaveLength(1);
    expect(r.err[0]).toMatch(
      /^round 3 failed \(1 of 5 in a row end the watch\), trying again in 1s: error: /,
    );
  });

  it('failures that are not in a row never add up: a 502 every other round, all 12 rounds run', async () => {
    const r = await flaky(['--count', '12'], (n) => (n % 2 === 0 && n < 12 ? status(502) : undefined));
    expect(r).toMatchObject({ code: 0, calls: 12, rounds: 7 });
    expect(r.err).toHaveLength(5);
  });

  it('5 failures in a row end it: exit 1, the fifth as the error', async () => {
    const r = await flaky(['--count', '10'], (n) => (n >= 2 ? status(502) : undefined));
    expect(r).toMatchObject({ code: 1, calls: 6, rounds: 1 });
    expect(r.err).toHaveLength(5);
    expect(r.err[3]).toMatch(/^round 5 failed \(4 of 5/);
    expect(r.err[4]).toMatch(/^error: http_502 — /);
  });

  it.each([
    ['--once', ['--once']],
    ['the last round', ['--count', '3']],
  ])('%s failing is the watch failing: exit 1', async (_what, args) => {
    const r = await flaky(args, (n) => (n === (args[0] === '--once' ? 1 : 3) ? status(502) : undefined));
    expect(r.code).toBe(1);
    expect(r.err).toEqual([expect.stringMatching(/^error: http_502 — /)]);
  });

  it('Ctrl-C after a failed round ends it on that failure: exit 1, not 0', async () => {
    const interrupt = new AbortController();
    // Ctrl-C while waiting for the round after a 502.
    const io = {
      ...recordingIo(),
      interrupted: interrupt.signal,
      sleep: async () => interrupt.abort(),
    };
    const fetch = (async () => status(502)) as unknown as typeof globalThis.fetch;
    const code = await runCli(
      ['fleet', 'watch', '-o', 'json', '--api', 'http://127.0.0.1:9'],
      cliDeps(io, fetch),
    );
    expect(code).toBe(1);
    expect(io.errLines.at(-1)).toMatch(/^error: http_502 — /);
  });

  it.each([
    ['401', () => Response.json({ error: 'unauthenticated' }, { status: 401 })],
    ['403', () => Response.json({ error: 'forbidden' }, { status: 403 })],
    ['an answer that is not the fleet state', () => Response.json({ rows: 'no' })],
  ])('%s still ends it at once: exit 1', async (_what, answer) => {
    const r = await flaky(['--count', '10'], (n) => (n === 2 ? answer() : undefined));
    expect(r).toMatchObject({ code: 1, calls: 2, rounds: 1 });
    expect(r.err[0]).toMatch(/^error: /);
  });
});
