import { describe, expect, it } from 'vitest';
import type { ProbeResult } from '../../../shared/src/adapters/probe/proxy-probe.js';
import type { RouteTargetCheck } from '../../../shared/src/domain/health/target-checks.js';
import { HealthCheckSpec } from '../../../shared/src/domain/proxy.js';
import { echoUp } from './prober-fixtures.unit.js';
import { SlotPool, type Timer } from './slot-pool.js';
import { echoCheck, type Prober, runActiveTiers, runTargetTier, type TierConfig } from './tiers.js';

const TARGET = { host: '10.0.0.1', port: 3128, credentials: null };
const ECHO = 'http://127.0.0.1:9/v1/echo';
const hc = HealthCheckSpec.parse({ url: 'http://health.example/', timeoutSeconds: 7 });
const cfg = (echoUrl: string | null): TierConfig => ({ echoUrl, callerIps: [], rejectUnauthorized: true });

const check = (route: string, expectedStatus = 200): RouteTargetCheck => ({
  route,
  url: `https://${route}.example/`,
  expectedStatus,
});

/** A prober that answers each URL as `outcome` says (default: ok) and records what it was asked. */
function prober(outcome: (url: string) => boolean = () => true) {
  const asked: Array<{ url: string; timeoutMs: number; expectedStatus: number }> = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const p: Prober = {
    probe: async (_target, opts) => {
      asked.push({ url: opts.url, timeoutMs: opts.timeoutMs, expectedStatus: opts.expectedStatus });
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      await new Promise((r) => setTimeout(r, 1));
      inFlight--;
      const ok = outcome(opts.url);
      const body = JSON.stringify({ ip: '10.0.0.1', headers: {} });
      const r: ProbeResult = {
        ok,
        latencyMs: 30,
        status: ok ? 200 : 403,
        body,
        failure: ok ? null : { stage: 'RESPONSE_HEADERS', code: 'unexpected_status_403' },
      };
      return r;
    },
    direct: echoUp,
    handshake: async () => ({ ok: true, latencyMs: 5, status: 200, body: null, failure: null }),
  };
  return { p, asked, maxInFlight: () => maxInFlight };
}

/** A timer that never fires on its own: a check waits for a slot until the test calls `fire()`. */
function manualTimer() {
  const armed: Array<() => void> = [];
  const timer: Timer = (_ms, signal) =>
    new Promise((resolve) => {
      armed.push(resolve);
      signal.addEventListener('abort', () => resolve());
    });
  return { timer, fire: () => armed.splice(0).forEach((r) => void r()) };
}

/** The proxy's tiers as a pass runs them: BASIC/EGRESS, then, once BASIC passed, its checks in `pool`. */
async function runTiers(
  p: Prober,
  target: typeof TARGET,
  ip: string,
  spec: HealthCheckSpec,
  config: TierConfig,
  checks: RouteTargetCheck[],
  pool = new SlotPool(10, manualTimer().timer),
) {
  const active = await runActiveTiers(p, target, ip, spec, config, async () => true);
  if (!active.basicOk) return { ...active, skipped: [] as string[] };
  const t = await runTargetTier(p, target, spec, config, checks, pool);
  return {
    results: [...active.results, ...t.results],
    observations: [...active.observations, ...t.observations],
    skipped: t.skipped,
  };
}

describe('runTiers: the TARGET tier', () => {
  it.each<[string, string | null, RouteTargetCheck[], string[]]>([
    ['no checks: BASIC and EGRESS only', ECHO, [], ['BASIC', 'EGRESS']],
    [
      'one check per route, after EGRESS',
      ECHO,
      [check('shop'), check('news')],
      ['BASIC', 'EGRESS', 'TARGET:shop', 'TARGET:news'],
    ],
    ['without the echo tier', null, [check('shop')], ['BASIC', 'TARGET:shop']],
  ])('%s', async (_name, echo, checks, tracks) => {
    const { p, asked } = prober();
    const out = await runTiers(p, TARGET, '10.0.0.1', hc, cfg(echo), checks);
    expect(out.results.map((r) => r.track)).toEqual(tracks);
    // Each target's URL through the proxy with its expected status and the proxy's own timeout.
    for (const c of checks) {
      expect(asked).toContainEqual({ url: c.url, timeoutMs: 7000, expectedStatus: c.expectedStatus });
    }
  });

  it('BASIC failing: no target is asked, no TARGET result (the tracks stay as they are)', async () => {
    const { p, asked } = prober((url) => url !== hc.url);
    const out = await runTiers(p, TARGET, '10.0.0.1', hc, cfg(ECHO), [check('shop'), check('news')]);
    expect(asked.map((a) => a.url)).toEqual([hc.url]);
    // The failure's code travels with the result: the Healthy condition names it (docs/health.md).
    expect(out.results).toEqual([
      { track: 'BASIC', ok: false, latencyMs: 30, problem: 'unexpected_status_403' },
    ]);
    expect(out.observations.map((o) => o.tier)).toEqual(['BASIC']);
  });

  it('a blocked target fails its own track only, observed with its route and code', async () => {
    const { p } = prober((url) => !url.includes('shop'));
    const out = await runTiers(p, TARGET, '10.0.0.1', hc, cfg(ECHO), [check('shop'), check('news', 204)]);
    expect(out.results.slice(2)).toEqual([
      { track: 'TARGET:shop', ok: false, latencyMs: 30 },
      { track: 'TARGET:news', ok: true, latencyMs: 30 },
    ]);
    expect(out.results[0]).toMatchObject({ track: 'BASIC', ok: true });
    expect(out.observations.slice(2)).toEqual([
      { tier: 'TARGET', route: 'shop', ok: false, latencyMs: 30, code: 'unexpected_status_403' },
      { tier: 'TARGET', route: 'news', ok: true, latencyMs: 30, code: null },
    ]);
  });

  it("queues a proxy's checks in the TARGET pool: at most its size in flight, results in routing order", async () => {
    const { p, maxInFlight } = prober();
    const checks = Array.from({ length: 5 }, (_, i) => check(`r${i}`));
    const out = await runTiers(
      p,
      TARGET,
      '10.0.0.1',
      hc,
      cfg(null),
      checks,
      new SlotPool(2, manualTimer().timer),
    );
    expect(maxInFlight()).toBe(2);
    expect(out.results.slice(1).map((r) => r.track)).toEqual(checks.map((c) => `TARGET:${c.route}`));
    expect(out.skipped).toEqual([]);
  });

  it('a check that finds no TARGET slot within its timeout is skipped: no request, no result, no observation', async () => {
    let release = () => {};
    const hanging: Prober = {
      ...prober().p,
      probe: (_t, opts) =>
        new Promise((resolve) => {
          release = () =>
            resolve({ ok: false, latencyMs: opts.timeoutMs, status: null, body: null, failure: null });
        }),
    };
    const wait = manualTimer();
    const pool = new SlotPool(1, wait.timer);
    const run = runTargetTier(hanging, TARGET, hc, cfg(null), [check('slow'), check('queued')], pool);
    await new Promise((r) => setImmediate(r));
    wait.fire(); // 'queued' has waited one timeout for the slot 'slow' holds
    await new Promise((r) => setImmediate(r));
    release();
    const out = await run;
    expect(out.skipped).toEqual(['queued']);
    expect(out.results.map((r) => r.track)).toEqual(['TARGET:slow']);
    expect(out.observations.map((o) => o.route)).toEqual(['slow']);
  });
});

describe('runActiveTiers: the EGRESS exit address rule', () => {
  // The prober's echo says the request left from 10.0.0.1; the proxy's own address is 10.0.0.9.
  it.each<[string, HealthCheckSpec, string[], string | null]>([
    ['by default the exit must be the proxy’s own', hc, [], 'exit_ip_mismatch'],
    ['exitIp: any takes another exit', HealthCheckSpec.parse({ ...hc, exitIp: 'any' }), [], null],
    [
      'exitIp: any still refuses the prober’s own address',
      HealthCheckSpec.parse({ ...hc, exitIp: 'any' }),
      ['10.0.0.1'],
      'exit_ip_is_caller',
    ],
  ])('%s', async (_name, spec, callerIps, problem) => {
    const { p } = prober();
    const out = await runActiveTiers(
      p,
      TARGET,
      '10.0.0.9',
      spec,
      { ...cfg(ECHO), callerIps },
      async () => true,
    );
    const egress = out.results.find((r) => r.track === 'EGRESS');
    expect(egress?.ok).toBe(problem === null);
    expect(egress?.problem ?? null).toBe(problem);
  });
});

describe('runActiveTiers: an EGRESS failure counts against the proxy only if the echo answers the prober', () => {
  const notEcho: ProbeResult = { ok: true, latencyMs: 30, status: 200, body: '<html>', failure: null };
  const egressOf = (out: { results: Array<{ track: string }> }) =>
    out.results.find((r) => r.track === 'EGRESS');

  it.each<[string, (url: string) => ProbeResult | null, boolean, boolean]>([
    ['no echo through the proxy, the echo answers the prober: the proxy fails', () => null, true, true],
    ['no echo through the proxy, nor to the prober (the API down): not counted', () => null, false, false],
    ['not an echo (a broken API revision), to the prober neither: not counted', () => notEcho, false, false],
    ['not an echo through the proxy, an echo to the prober: the proxy fails', () => notEcho, true, true],
  ])('%s', async (_name, through, echoAnswers, counted) => {
    const { p } = prober((url) => url !== ECHO);
    const fake: Prober = {
      ...p,
      probe: async (target, opts) =>
        opts.url === ECHO ? (through(opts.url) ?? p.probe(target, opts)) : p.probe(target, opts),
    };
    const asked: number[] = [];
    const out = await runActiveTiers(fake, TARGET, '10.0.0.1', hc, cfg(ECHO), async (ms) => {
      asked.push(ms);
      return echoAnswers;
    });
    expect(asked).toEqual([7000]);
    expect(egressOf(out)?.track === 'EGRESS').toBe(counted);
    if (counted) expect(egressOf(out)).toMatchObject({ ok: false });
    expect(out.egressUncounted).toBe(!counted);
    // The probe happened either way: its probe.result line says how it went.
    expect(out.observations.find((o) => o.tier === 'EGRESS')).toMatchObject({ ok: false });
  });

  it('a verdict on what the echo saw (an exit elsewhere) counts without asking', async () => {
    const { p } = prober();
    let asked = false;
    const out = await runActiveTiers(p, TARGET, '10.0.0.9', hc, cfg(ECHO), async () => {
      asked = true;
      return false;
    });
    expect(asked).toBe(false);
    expect(egressOf(out)).toMatchObject({ ok: false, problem: 'exit_ip_mismatch' });
  });

  it('echoCheck asks the echo endpoint once for the pass and timeout, and only an echo is an answer', async () => {
    let calls = 0;
    const direct = (r: ProbeResult): Prober => ({
      ...prober().p,
      direct: async () => {
        calls++;
        return r;
      },
    });
    const up = echoCheck(direct(await echoUp({ url: ECHO, timeoutMs: 1, expectedStatus: 200 })), ECHO);
    expect([await up(1000), await up(1000)]).toEqual([true, true]);
    expect(calls).toBe(1);
    expect(await echoCheck(direct(notEcho), ECHO)(1000)).toBe(false);
    const unavailable = { ...notEcho, ok: false, status: 503, body: 'unavailable' };
    expect(await echoCheck(direct(unavailable), ECHO)(1000)).toBe(false);
  });
});

describe('runActiveTiers: where BASIC’s handshake goes without a health-check URL', () => {
  const noUrl = HealthCheckSpec.parse({ timeoutSeconds: 7 });
  const handshakes = async (tiers: TierConfig) => {
    const asked: string[] = [];
    const p: Prober = {
      ...prober().p,
      handshake: async (_target, authority) => {
        asked.push(authority);
        return { ok: true, latencyMs: 5, status: 200, body: null, failure: null };
      },
    };
    await runActiveTiers(p, TARGET, '10.0.0.1', noUrl, tiers, async () => true);
    return asked;
  };

  it.each<[string, TierConfig, string]>([
    ['the echo’s host and port', cfg(ECHO), '127.0.0.1:9'],
    ['an https echo’s: port 443', cfg('https://api.example/v1/echo'), 'api.example:443'],
    // An http echo on port 80: squid's SSL_ports refuses a CONNECT there on every managed VM.
    [
      'the handshake URL’s, when set, over the echo’s',
      { ...cfg('http://echo.example/echo'), handshakeUrl: 'https://api.example' },
      'api.example:443',
    ],
    ['no echo: a well-known https site', cfg(null), 'www.google.com:443'],
  ])('%s', async (_name, tiers, authority) => {
    expect(await handshakes(tiers)).toEqual([authority]);
  });
});
