import { describe, expect, it } from 'vitest';
import type { PassiveSettings, PassiveTrack } from './passive-track.js';
import {
  decideHealth,
  type HealthSeed,
  healthVerdictOf,
  type ProxyHealthState,
  type TrackResult,
} from './proxy-health.js';
import type { ActiveTrack } from './verdict-reason.js';

const t = { successThreshold: 2, failureThreshold: 2 };
// Instance keys (instance-key.ts): a replacement keeps the providerId (names derive from the UID) and
// differs only in when it turned Provisioned=True.
const instanceA = 'zones/z/instances/pp-a@2026-01-01T00:00:00.000Z';
const replacement = 'zones/z/instances/pp-a@2026-01-01T00:20:00.000Z';
const now = new Date('2026-01-01T00:10:00Z');
const later = (s: number) => new Date(now.getTime() + s * 1000);
const ok = (latencyMs = 50): TrackResult[] => [
  { track: 'BASIC', ok: true, latencyMs },
  { track: 'EGRESS', ok: true, latencyMs },
];
// As tiers.ts runs them: EGRESS only through a proxy that passed BASIC.
const fail: TrackResult[] = [{ track: 'BASIC', ok: false, latencyMs: 5000 }];
const leak: TrackResult[] = [
  { track: 'BASIC', ok: true, latencyMs: 50 },
  { track: 'EGRESS', ok: false, latencyMs: 50, problem: 'forwarded_header_leak' },
];
const BOTH: ActiveTrack[] = ['BASIC', 'EGRESS'];
// Probed on BASIC alone: no echo endpoint, or one that does not answer the prober (tiers.ts egressUncounted).
const basicOnly: TrackResult[] = [{ track: 'BASIC', ok: true, latencyMs: 50 }];

function runTicks(
  results: TrackResult[][],
  seed: HealthSeed | null = null,
  start: ProxyHealthState | null = null,
  active: ActiveTrack[] = BOTH,
) {
  let state = start;
  const decisions = [];
  for (const [i, r] of results.entries()) {
    const dec = decideHealth(state, 'p1', instanceA, seed, r, active, t, later(i * 61));
    decisions.push(dec);
    state = dec.next;
  }
  return decisions;
}

describe('decideHealth', () => {
  it('first verdict is written and published; a steady proxy then costs nothing', () => {
    const ds = runTicks([ok(), ok(), ok(), ok(), ok()]);
    expect(ds.map((d) => d.next.verdict)).toEqual([null, 'AVAILABLE', 'AVAILABLE', 'AVAILABLE', 'AVAILABLE']);
    expect(ds.map((d) => d.write)).toEqual([true, true, false, false, false]);
    // tick 0 reports the first latency; tick 1 is the first verdict
    expect(ds.map((d) => d.publish)).toEqual(['health-transition', 'health-transition', null, null, null]);
  });

  it('flips to unhealthy only at the failure threshold, and back only at the success threshold', () => {
    const ds = runTicks([ok(), ok(), fail, fail, fail, ok(), ok()]);
    expect(ds.map((d) => d.next.verdict)).toEqual([
      null,
      'AVAILABLE',
      'SUSPECT',
      'UNHEALTHY',
      'UNHEALTHY',
      'UNHEALTHY',
      'AVAILABLE',
    ]);
    // SUSPECT keeps Healthy=True but changes its reason (ProbeSuspect): reconcile writes that, once.
    expect(ds[2]?.publish).toBe('health-transition');
    expect(healthVerdictOf(ds[2]!.next)).toMatchObject({ healthy: true, reason: 'ProbeSuspect' });
    expect(ds[3]?.publish).toBe('health-transition');
    expect(ds[4]?.write).toBe(false);
    expect(ds[6]?.publish).toBe('health-transition');
  });

  it('SUSPECT in and out each publish once (the reason in status changes), a steady SUSPECT does not', () => {
    const t3 = { successThreshold: 2, failureThreshold: 3 };
    let state: ProxyHealthState | null = null;
    const ds = [ok(), ok(), fail, fail, ok()].map((r, i) => {
      const dec = decideHealth(state, 'p1', instanceA, null, r, BOTH, t3, later(i * 61));
      state = dec.next;
      return dec;
    });
    expect(ds.map((d) => d.next.verdict)).toEqual([null, 'AVAILABLE', 'SUSPECT', 'SUSPECT', 'AVAILABLE']);
    expect(ds.slice(2).map((d) => d.publish)).toEqual(['health-transition', null, 'health-transition']);
    expect(ds.slice(2).map((d) => healthVerdictOf(d.next)?.reason)).toEqual([
      'ProbeSuspect',
      'ProbeSuspect',
      'ProbeSucceeded',
    ]);
  });

  it('seeds from the verdict already in status, so a new function instance does not reset the fleet', () => {
    const seed: HealthSeed = { healthy: true, latencyMillis: 50, lastHealthCheckTime: now };
    const [first] = runTicks([ok(52)], seed);
    expect(first?.next.verdict).toBe('AVAILABLE');
    expect(first?.publish).toBeNull();
  });

  it('a replaced instance starts with fresh counters and ignores the old seed', () => {
    const [healthy] = runTicks([ok(), ok()]).slice(-1);
    const dec = decideHealth(healthy!.next, 'p1', replacement, null, ok(), BOTH, t, later(500));
    expect(dec.next.instance).toBe(replacement);
    expect(dec.next.verdict).toBeNull();
    expect(dec.write).toBe(true);
  });

  it('reports a slow proxy latency once, not on every tick', () => {
    const ds = runTicks([ok(50), ok(50), ok(400), ok(410), ok(405), ok(400)]);
    expect(ds.map((d) => d.next.latency.reportedMs)).toEqual([50, 50, 400, 400, 400, 400]);
    expect(ds.slice(3).every((d) => d.publish === null && !d.write)).toBe(true);
  });

  it('keeps the reported latencies (not every probe) as a bounded history for the sparkline', () => {
    const ds = runTicks([ok(50), ok(50), ok(400), ok(410), ok(100)]);
    expect(ds.at(-1)!.next.latencyHistory!.map((h) => h.ms)).toEqual([50, 400, 100]);
    expect(ds.at(-1)!.next.latencyHistory!.map((h) => h.at)).toEqual([later(0), later(122), later(244)]);
    const many = runTicks(Array.from({ length: 30 }, (_, i) => ok(i % 2 === 0 ? 50 : 500)));
    expect(many.at(-1)!.next.latencyHistory).toHaveLength(20);
    expect(many.at(-1)!.next.latencyHistory!.at(-1)!.ms).toBe(500);
  });

  it('a proxy failing BASIC from its first probe (no EGRESS ever) becomes UNHEALTHY at the threshold', () => {
    const ds = runTicks([fail, fail, fail]);
    expect(ds.map((d) => d.next.verdict)).toEqual([null, 'UNHEALTHY', 'UNHEALTHY']);
    expect(ds.map((d) => d.publish)).toEqual([null, 'health-transition', null]);
    expect(ds[1]!.next.tracks.EGRESS).toBeUndefined();
    expect(healthVerdictOf(ds[1]!.next)).toMatchObject({ healthy: false, reason: 'ProbeFailed' });
  });

  it('a BASIC failure says why in the Healthy message: the code of the failure that made the verdict', () => {
    const refused = (code: string): TrackResult[] => [
      { track: 'BASIC', ok: false, latencyMs: 4, problem: code },
    ];
    const ds = runTicks([ok(), ok(), refused('connect_status_403'), refused('connect_status_403')]);
    expect(healthVerdictOf(ds[3]!.next)).toMatchObject({
      healthy: false,
      reason: 'ProbeFailed',
      message: 'the proxy failed its health checks: BASIC connect_status_403',
    });
    // Another code on a track already clamped at its threshold is no write: a dead proxy stays free.
    const next = decideHealth(ds[3]!.next, 'p1', instanceA, null, refused('timeout'), BOTH, t, later(400));
    expect(next.write).toBe(false);
    expect(next.publish).toBeNull();
    // Passing again clears it: a later failure does not carry an old code.
    const back = runTicks([ok(), ok()], null, ds[3]!.next);
    expect(back.at(-1)!.next.basicProblem ?? null).toBeNull();
    // A stored state from before the field (no code) keeps the old message.
    const { basicProblem: _dropped, ...older } = ds[3]!.next;
    expect(healthVerdictOf(older)?.message).toBe('the proxy failed its health checks');
  });

  it('a proxy passing BASIC waits for its EGRESS verdict too', () => {
    expect(runTicks([basicOnly, basicOnly, ok()]).map((d) => d.next.verdict)).toEqual([null, null, null]);
    expect(runTicks([basicOnly, ok(), ok()]).map((d) => d.next.verdict)).toEqual([null, null, 'AVAILABLE']);
  });

  it('without an echo endpoint BASIC alone decides, and a seeded EGRESS track cannot pin the proxy', () => {
    const fresh = runTicks([basicOnly, basicOnly], null, null, ['BASIC']);
    expect(fresh.map((d) => d.next.verdict)).toEqual([null, 'AVAILABLE']);
    // Status said unhealthy: initialHealth seeds both tracks UNHEALTHY; EGRESS will never run again.
    const seed: HealthSeed = { healthy: false, latencyMillis: null, lastHealthCheckTime: now };
    const ds = runTicks([basicOnly, basicOnly], seed, null, ['BASIC']);
    expect(ds.map((d) => d.next.verdict)).toEqual(['UNHEALTHY', 'AVAILABLE']);
    expect(ds[1]!.publish).toBe('health-transition');
    expect(Object.keys(ds[1]!.next.tracks)).toEqual(['BASIC']);
  });

  it('a verdict made by BASIC alone is kept while the EGRESS track is still undecided', () => {
    // Defaults: one success is AVAILABLE, three failures UNHEALTHY — EGRESS decides later than BASIC.
    const lenient = { successThreshold: 1, failureThreshold: 3 };
    let state: ProxyHealthState | null = null;
    const ds = [fail, fail, fail, leak, leak, leak].map((r, i) => {
      const dec = decideHealth(state, 'p1', instanceA, null, r, BOTH, lenient, later(i * 61));
      state = dec.next;
      return dec;
    });
    expect(ds.map((d) => d.next.verdict)).toEqual([
      null,
      null,
      'UNHEALTHY',
      'UNHEALTHY',
      'UNHEALTHY',
      'UNHEALTHY',
    ]);
    expect(ds.map((d) => healthVerdictOf(d.next)?.reason)).toEqual([
      undefined,
      undefined,
      'ProbeFailed',
      'ProbeFailed', // BASIC passes again; EGRESS has failed once of three: not its verdict yet
      'ProbeFailed',
      'EgressCheckFailed',
    ]);
    // Reconcile hears of the first verdict and of the reason change; BASIC's recovery publishes only its latency.
    expect(ds.map((d) => d.publish !== null)).toEqual([false, false, true, true, false, true]);
  });

  it('a BASIC failure after an egress problem says ProbeFailed, and reconcile hears of the new reason', () => {
    const ds = runTicks([ok(), ok(), leak, leak, fail, fail]);
    expect(ds.map((d) => healthVerdictOf(d.next)?.reason)).toEqual([
      undefined,
      'ProbeSucceeded',
      'ProbeSuspect',
      'EgressCheckFailed',
      'EgressCheckFailed', // BASIC SUSPECT: EGRESS still explains
      'ProbeFailed',
    ]);
    expect(ds[5]!.publish).toBe('health-transition');
  });

  it('records the EGRESS problem and clears it on recovery', () => {
    const ds = runTicks([ok(), ok(), leak, leak, ok(), ok()]);
    expect(ds[3]?.next.verdict).toBe('UNHEALTHY');
    expect(ds[3]?.next.egressProblem).toBe('forwarded_header_leak');
    expect(ds[5]?.next.egressProblem).toBeNull();
  });

  it('an EGRESS track still UNHEALTHY keeps its problem: one pass short of recovery is no reason flip', () => {
    // successThreshold 2: one passing EGRESS result leaves the track UNHEALTHY (1 of 2), and the proxy
    // with it. Its reason stays EgressCheckFailed — not ProbeFailed while BASIC is AVAILABLE — and
    // nothing is published.
    const ds = runTicks([ok(), ok(), leak, leak, ok()]);
    expect(ds[4]!.next.tracks.EGRESS?.verdict).toBe('UNHEALTHY');
    expect(ds[4]!.next.verdict).toBe('UNHEALTHY');
    expect(ds[4]!.next.egressProblem).toBe('forwarded_header_leak');
    expect(healthVerdictOf(ds[4]!.next)).toMatchObject({
      healthy: false,
      reason: 'EgressCheckFailed',
      message: 'egress check failed: forwarded_header_leak',
    });
    expect(ds[4]!.publish).toBeNull();
    // A flapping exit that never passes twice in a row: no health write, publish or status write per probe.
    const flap = runTicks([ok(), ok(), leak, leak, ok(), leak, ok(), leak]);
    expect(flap.slice(4).map((d) => d.publish)).toEqual([null, null, null, null]);
    expect(flap.slice(4).map((d) => healthVerdictOf(d.next)?.reason)).toEqual(
      Array(4).fill('EgressCheckFailed'),
    );
  });

  it('a BASIC track still UNHEALTHY keeps its code in the message until the track recovers', () => {
    const refused: TrackResult[] = [{ track: 'BASIC', ok: false, latencyMs: 4, problem: 'econnrefused' }];
    const ds = runTicks([ok(), ok(), refused, refused, ok()]);
    expect(ds[4]!.next.tracks.BASIC?.verdict).toBe('UNHEALTHY');
    expect(healthVerdictOf(ds[4]!.next)?.message).toBe(
      'the proxy failed its health checks: BASIC econnrefused',
    );
  });

  it('a run re-deciding at an older window end than the stored transition keeps the stored one', () => {
    // An overlapping run that outlived the next: its window ends at later(61); the state it re-decides on
    // was written by the newer run at later(122). Its flip is published, but the check time does not go back.
    const ds = runTicks([ok(), ok(), fail]);
    const stored = ds[2]!.next;
    expect(stored.transitionAt).toEqual(later(122));
    const stale = decideHealth(stored, 'p1', instanceA, null, fail, BOTH, t, later(61));
    expect(stale.next.verdict).toBe('UNHEALTHY');
    expect(stale.publish).toBe('health-transition');
    expect(stale.next.transitionAt).toEqual(later(122));
    // In order, a flip takes its own time.
    expect(decideHealth(stored, 'p1', instanceA, null, fail, BOTH, t, later(183)).next.transitionAt).toEqual(
      later(183),
    );
  });

  it('another EGRESS code on a track already clamped UNHEALTHY is no write, as BASIC’s is not', () => {
    const egressFails = (code: string): TrackResult[] => [
      { track: 'BASIC', ok: true, latencyMs: 50 },
      { track: 'EGRESS', ok: false, latencyMs: 50, problem: code },
    ];
    const ds = runTicks([ok(), ok(), egressFails('timeout'), egressFails('timeout')]);
    expect(healthVerdictOf(ds[3]!.next)).toMatchObject({ reason: 'EgressCheckFailed' });
    // A steady failing proxy costs no write per probe, whatever its failures are called.
    for (const code of ['econnreset', 'timeout', 'bad_echo_response']) {
      const next = decideHealth(ds[3]!.next, 'p1', instanceA, null, egressFails(code), BOTH, t, later(400));
      expect(next.write, code).toBe(false);
      expect(next.publish, code).toBeNull();
    }
  });
});

describe('decideHealth with the PASSIVE track', () => {
  const settings: PassiveSettings = { successThreshold: 2, failureThreshold: 3, expiryMs: 180_000 };
  /** A proxy that passes its probes, then one tick per row: [probe results (or none due), gateway signal]. */
  function runRows(rows: Array<[TrackResult[], boolean | null]>) {
    let state = runTicks([ok(), ok()]).at(-1)!.next;
    const out = [];
    for (const [i, [results, signal]] of rows.entries()) {
      const dec = decideHealth(state, 'p1', instanceA, null, results, BOTH, t, later(200 + i * 60), {
        signal,
        settings,
      });
      out.push(dec);
      state = dec.next;
    }
    return out;
  }

  it('gateways failing a proxy that passes its probe: SUSPECT, then UNHEALTHY with the passive reason', () => {
    const ds = runRows([
      [ok(), false],
      [ok(), false],
      [ok(), false],
      [ok(), false],
    ]);
    expect(ds.map((d) => d.next.verdict)).toEqual(['SUSPECT', 'SUSPECT', 'UNHEALTHY', 'UNHEALTHY']);
    expect(ds.map((d) => d.publish)).toEqual(['health-transition', null, 'health-transition', null]);
    expect(healthVerdictOf(ds[0]!.next)).toMatchObject({ healthy: true, reason: 'PassiveSuspect' });
    expect(healthVerdictOf(ds[2]!.next)).toMatchObject({ healthy: false, reason: 'PassiveFailures' });
    expect(ds[3]!.write).toBe(true); // the signal time moves: the expiry window restarts
  });

  it('passing signals on a healthy proxy store nothing and write nothing (a busy steady fleet)', () => {
    const ds = runRows([
      [ok(), true],
      [[], true],
      [ok(), null],
    ]);
    expect(ds.every((d) => !d.write && d.publish === null && d.next.passive === null)).toBe(true);
  });

  it('without signals the passive evidence expires and the active tiers alone decide again', () => {
    const ds = runRows([
      [ok(), false],
      [ok(), false],
      [ok(), false],
      [ok(), null],
      [ok(), null],
      [ok(), null],
    ]);
    expect(ds.map((d) => d.next.verdict)).toEqual([
      'SUSPECT',
      'SUSPECT',
      'UNHEALTHY',
      'UNHEALTHY',
      'UNHEALTHY',
      'AVAILABLE',
    ]);
    expect(ds[5]!.publish).toBe('health-transition');
    expect(ds[5]!.next.passive).toBeNull();
    expect(healthVerdictOf(ds[5]!.next)?.reason).toBe('ProbeSucceeded');
  });

  it('an unhealthy proxy whose probe recovers while gateways still fail it changes reason, and says so', () => {
    const ds = runRows([
      [fail, false],
      [fail, false],
      [fail, false],
      [ok(), false],
      [ok(), false],
    ]);
    // The active threshold here is 2; a failing BASIC runs no EGRESS.
    expect(ds.map((d) => healthVerdictOf(d.next)?.reason)).toEqual([
      'ProbeSuspect',
      'ProbeFailed',
      'ProbeFailed',
      'ProbeFailed', // BASIC has one success of two
      'PassiveFailures', // the probe passes; the gateways still fail it
    ]);
    expect(ds[4]!.publish).toBe('health-transition');
  });

  it('an EGRESS tier still undecided keeps the active verdict, and the gateways still move it both ways', () => {
    // A fleet probed on BASIC alone, then an echo endpoint configured that does not answer the prober:
    // EGRESS gets no counted result (tiers.ts egressUncounted), so it stays undecided for as long.
    let state = runTicks([basicOnly, basicOnly], null, null, ['BASIC']).at(-1)!.next;
    expect(state.verdict).toBe('AVAILABLE');
    const signals = [false, false, false, null, null, null, null];
    const ds = signals.map((signal, i) => {
      const dec = decideHealth(state, 'p1', instanceA, null, basicOnly, BOTH, t, later(200 + i * 60), {
        signal,
        settings,
      });
      state = dec.next;
      return dec;
    });
    expect(ds.every((d) => d.next.tracks.EGRESS === undefined)).toBe(true);
    expect(ds.map((d) => d.next.verdict)).toEqual([
      'SUSPECT',
      'SUSPECT',
      'UNHEALTHY',
      'UNHEALTHY',
      'UNHEALTHY',
      'AVAILABLE', // the gateways' evidence expired: the kept active verdict alone, not a pinned UNHEALTHY
      'AVAILABLE',
    ]);
    expect(ds.map((d) => healthVerdictOf(d.next)?.reason)).toEqual([
      'PassiveSuspect',
      'PassiveSuspect',
      'PassiveFailures',
      'PassiveFailures',
      'PassiveFailures',
      'ProbeSucceeded',
      'ProbeSucceeded',
    ]);
    expect(ds.map((d) => d.publish)).toEqual([
      'health-transition',
      null,
      'health-transition',
      null,
      null,
      'health-transition',
      null,
    ]);
    expect(ds.every((d) => d.next.activeVerdict === 'AVAILABLE')).toBe(true);
  });

  // A document written before activeVerdict (or by an older revision, which leaves the field as it was).
  describe('a stored state without a usable active verdict, while EGRESS is undecided', () => {
    const failing: PassiveTrack = {
      track: { verdict: 'UNHEALTHY', consecutiveOk: 0, consecutiveFail: 3 },
      lastSignalAt: later(100),
    };
    const older = (over: Partial<ProxyHealthState>): ProxyHealthState => {
      const { activeVerdict: _none, ...s } = runTicks([basicOnly, basicOnly], null, null, ['BASIC']).at(
        -1,
      )!.next;
      return { ...s, ...over };
    };
    const decide = (state: ProxyHealthState, signal: boolean | null, at: Date) =>
      decideHealth(state, 'p1', instanceA, null, basicOnly, BOTH, t, at, { signal, settings });

    it('a verdict the gateways made worse is not taken for the active one: it recovers when they stop', () => {
      const stuck = older({ verdict: 'UNHEALTHY', passive: failing });
      expect(healthVerdictOf(stuck)?.reason).toBe('PassiveFailures');
      const now1 = decide(stuck, null, later(200));
      expect(now1.next).toMatchObject({ verdict: 'UNHEALTHY', activeVerdict: 'AVAILABLE' });
      expect(healthVerdictOf(now1.next)?.reason).toBe('PassiveFailures');
      const expired = decide(now1.next, null, later(100 + 180));
      expect(expired.next.verdict).toBe('AVAILABLE');
      expect(expired.publish).toBe('health-transition');
      // Its evidence already gone before the field existed: the stored tracks decide at once.
      expect(decide(older({ verdict: 'UNHEALTHY' }), null, later(200)).next.verdict).toBe('AVAILABLE');
    });

    it('a stored active verdict worse than the verdict (an older revision moved only the verdict) is not taken', () => {
      const rolledBack = { ...older({ verdict: 'AVAILABLE' }), activeVerdict: 'UNHEALTHY' as const };
      const dec = decide(rolledBack, null, later(200));
      expect(dec.next).toMatchObject({ verdict: 'AVAILABLE', activeVerdict: 'AVAILABLE' });
      expect(dec.publish).toBeNull();
    });

    it('tracks that give no active verdict (BASIC failed from the first probe): the stored verdict stands in', () => {
      const lenient = { successThreshold: 1, failureThreshold: 3 };
      let state: ProxyHealthState | null = null;
      for (const [i, r] of [fail, fail, fail, leak].entries()) {
        state = decideHealth(state, 'p1', instanceA, null, r, BOTH, lenient, later(i * 61)).next;
      }
      const { activeVerdict: _none, ...s } = state!;
      expect(s.tracks.EGRESS?.verdict).toBeNull();
      const dec = decideHealth(s, 'p1', instanceA, null, basicOnly, BOTH, lenient, later(300), {
        signal: false,
        settings,
      });
      expect(dec.next).toMatchObject({ verdict: 'UNHEALTHY', activeVerdict: 'UNHEALTHY' });
    });
  });

  it('a replaced instance starts without passive evidence', () => {
    const [down] = runRows([[ok(), false]]);
    expect(down!.next.passive).not.toBeNull();
    const dec = decideHealth(down!.next, 'p1', replacement, null, ok(), BOTH, t, later(900));
    expect(dec.next.passive).toBeNull();
  });
});
