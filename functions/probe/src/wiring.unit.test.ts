// probeDeps hands the passive track the environment's settings (docs/health.md § PASSIVE): nothing else
// builds them from the configuration — test/support/probe-fleet.ts writes its own — so a setting dropped or
// crossed here would go unseen. Building the deps opens no connection: the Google clients connect on their
// first request, and no request is made.
import { describe, expect, it } from 'vitest';
import { memoryLogger } from '../../../shared/src/adapters/log/json-logger.js';
import { loadFunctionTable } from '../../../shared/src/config/topology.js';
import { loadProbeConfig } from './config.js';
import { probeDeps } from './wiring.js';

describe('probeDeps', () => {
  it('gives the passive track the configured thresholds, expiry, tick period and rule', () => {
    const deps = probeDeps(
      loadProbeConfig({
        GOOGLE_CLOUD_PROJECT: 'demo-wiring',
        FIRESTORE_EMULATOR_HOST: '127.0.0.1:9',
        PUBSUB_EMULATOR_HOST: '127.0.0.1:9',
        SECRET_MANAGER_EMULATOR_HOST: '127.0.0.1:9',
        // Every value apart from its default and from the others: a crossed pair shows.
        PROBE_TICK_PERIOD_SECONDS: '20',
        PROBE_PASSIVE_SUCCESS_THRESHOLD: '4',
        PROBE_PASSIVE_FAILURE_THRESHOLD: '7',
        PROBE_PASSIVE_EXPIRY_SECONDS: '50',
        PROBE_PASSIVE_MIN_SAMPLES: '9',
        PROBE_PASSIVE_MAX_FAILURE_RATIO: '0.4',
        PROBE_PASSIVE_SETTLE_SECONDS: '3',
      }),
      memoryLogger(),
    );
    expect(deps.passive?.settings).toEqual({
      successThreshold: 4,
      failureThreshold: 7,
      expiryMs: 50_000,
      // The passive pass counts the expiry in ticks of the deployed period (passive-track.ts).
      tickPeriodMs: 20_000,
    });
    expect(deps.passive?.rule).toEqual({ minSamples: 9, maxFailureRatio: 0.4 });
    expect(deps.passive?.settleMs).toBe(3_000);
    expect(deps.tickPeriodMs).toBe(20_000);
    // The deployed timeout (shared/topology/functions.json) bounds the run's record (handler.ts).
    expect(deps.timeoutMs).toBe(loadFunctionTable().functions.probe!.timeoutSeconds * 1000);
  });

  it('with the defaults: the expiry three tick periods, in ticks of that period', () => {
    const deps = probeDeps(
      loadProbeConfig({
        FIRESTORE_EMULATOR_HOST: '127.0.0.1:9',
        PUBSUB_EMULATOR_HOST: '127.0.0.1:9',
        SECRET_MANAGER_EMULATOR_HOST: '127.0.0.1:9',
      }),
      memoryLogger(),
    );
    expect(deps.passive?.settings).toEqual({
      successThreshold: 2,
      failureThreshold: 3,
      expiryMs: 180_000,
      tickPeriodMs: 60_000,
    });
  });
});
