// "Is the echo up?" (echoCheck) is asked with each failing proxy's own timeout: an echo slower than one
// proxy's timeout must not read as down for a proxy whose timeout it answers within (docs/health.md
// § Tracks and verdicts: an echo endpoint that is down fails no proxy; one that answers does count).
import { describe, expect, it } from 'vitest';
import type { ProbeOptions, ProbeResult } from '../../../shared/src/adapters/probe/proxy-probe.js';
import type { ProxyHealthState } from '../../../shared/src/domain/health/proxy-health.js';
import { inMemoryHealthStore } from '../../../shared/src/testing/in-memory-health-store.js';
import { aProxy, managedSpec } from '../../../shared/src/testing/proxy-fixtures.js';
import { RecordingReconcilePublisher } from '../../../shared/src/testing/recording-publisher.js';
import { noOutcomes } from './passive-fixtures.unit.js';
import { type ProbeDeps, runProbePass } from './probe-pass.js';
import { echoCheck } from './tiers.js';

const t0 = new Date('2026-01-01T00:00:00Z');
const ECHO = 'http://127.0.0.1:9/v1/echo';
const ok: ProbeResult = { ok: true, latencyMs: 5, status: 200, body: null, failure: null };
const noEcho: ProbeResult = {
  ok: false,
  latencyMs: 5,
  status: null,
  body: null,
  failure: { stage: 'RESPONSE_HEADERS', code: 'timeout' },
};
/** The echo answering the prober itself in 1.5 s (a Cloud Run cold start): within a check's timeout or not. */
const slowEcho =
  (asked: number[]) =>
  async (o: ProbeOptions): Promise<ProbeResult> => {
    asked.push(o.timeoutMs);
    return o.timeoutMs >= 1500
      ? {
          ok: true,
          latencyMs: 1500,
          status: 200,
          body: JSON.stringify({ ip: '192.0.2.1', headers: {} }),
          failure: null,
        }
      : { ...noEcho, failure: { stage: 'DIAL', code: 'timeout' } };
  };
const withTimeout = (name: string, ip: string, timeoutSeconds: number) =>
  aProxy({
    name,
    spec: managedSpec({ healthCheck: { timeoutSeconds, successThreshold: 1, failureThreshold: 1 } }),
    status: { ip, providerId: `zones/z/instances/${name}` },
  });

describe('the direct echo check, per failing proxy timeout', () => {
  it("a 1 s proxy failing EGRESS first does not make the echo read as down for a 60 s proxy's failure", async () => {
    const health = new Map<string, ProxyHealthState>();
    const asked: number[] = [];
    const deps: ProbeDeps = {
      health: inMemoryHealthStore(health),
      publisher: new RecordingReconcilePublisher(),
      secrets: { access: async () => 'user:pw' },
      prober: {
        direct: slowEcho(asked),
        handshake: async () => ok,
        // neither proxy gets an echo through; 'slow' (timeout 60 s) fails a moment after 'fast' (1 s)
        probe: async (t) => {
          if (t.host === '10.0.0.9') await new Promise((r) => setTimeout(r, 50));
          return noEcho;
        },
      },
      log: { info: () => {}, warn: () => {} },
      recorder: { observe: () => {} },
      tiers: { echoUrl: ECHO, callerIps: [], rejectUnauthorized: true },
      concurrency: 4,
      passive: noOutcomes(),
    };
    const all = [withTimeout('fast', '10.0.0.8', 1), withTimeout('slow', '10.0.0.9', 60)];
    await runProbePass(deps, all, t0, new Date(t0.getTime() + 30_000), new Set(), []);
    expect(asked.sort((a, b) => a - b)).toEqual([1_000, 60_000]);
    // The echo answers the prober within 60 s: 'slow' gets no echo through it, and that counts.
    expect(health.get('slow')?.tracks.EGRESS?.consecutiveFail).toBe(1);
    // Within 1 s it does not: 'fast' missing its echo says nothing about 'fast'.
    expect(health.get('fast')?.tracks.EGRESS).toBeUndefined();
  });

  it('asks once per timeout within a pass', async () => {
    const asked: number[] = [];
    const up = echoCheck({ probe: async () => ok, handshake: async () => ok, direct: slowEcho(asked) }, ECHO);
    expect(await Promise.all([up(1_000), up(5_000), up(1_000), up(5_000), up(5_000)])).toEqual([
      false,
      true,
      false,
      true,
      true,
    ]);
    expect(asked).toEqual([1_000, 5_000]);
  });
});
