// The `gateway.snapshot_age` line Terraform's stale-gateway alert is built on (terraform/monitoring.tf:
// the worker_snapshot_age distribution reads jsonPayload.ageSeconds by jsonPayload.workerId, and its
// absence condition fires when no worker logs it). Logged every GATEWAY_SNAPSHOT_AGE_LOG_SECONDS, at INFO,
// with every field the metric reads — also by a worker that never got a snapshot (then: the process's age).
import { afterEach, describe, expect, it, vi } from 'vitest';
import { missingContractFields } from '../../../shared/src/testing/log-contract.js';
import { loadGatewayConfig } from './config.js';
import { startGateway } from './gateway.js';
import { jsonLogger } from './logger.js';
import type { SnapshotSource } from './session.js';

/** Offers nothing: the worker runs without a snapshot, as one whose control plane never sends one. */
const silentSource: SnapshotSource = { start: async () => {}, stop: async () => {} };

const config = () =>
  loadGatewayConfig([], {
    GATEWAY_CLIENT_USERS: 'u:p',
    HOST: '127.0.0.1',
    PORT: '0',
    GATEWAY_PROXY_PORT: '0',
    GATEWAY_SNAPSHOT_AGE_LOG_SECONDS: '1',
    GATEWAY_DRAIN_TIMEOUT_MS: '0',
  });

describe('the gateway.snapshot_age line', () => {
  it('comes every GATEWAY_SNAPSHOT_AGE_LOG_SECONDS at INFO with the fields the stale-gateway metric reads', async () => {
    const lines: Array<Record<string, unknown>> = [];
    const gw = await startGateway(config(), {
      // At info, the highest level Terraform's log_level allows (code-contract.test.ts).
      log: jsonLogger('info', (l) => lines.push(JSON.parse(l))),
      version: 't',
      source: silentSource,
      workerId: 'gw-age',
    });
    try {
      const deadline = Date.now() + 5_000;
      while (!lines.some((l) => l.event === 'gateway.snapshot_age') && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 50));
    } finally {
      await gw.shutdown();
    }
    const age = lines.filter((l) => l.event === 'gateway.snapshot_age');
    expect(age.length).toBeGreaterThan(0);
    expect(age[0]).toMatchObject({ severity: 'INFO', workerId: 'gw-age', snapshotVersion: null });
    // A number: the metric's value extractor makes a distribution of it.
    expect(age[0]!.ageSeconds).toEqual(expect.any(Number));
    expect(age[0]!.ageSeconds as number).toBeGreaterThanOrEqual(1);
    expect(age.map(missingContractFields)).toEqual(age.map(() => []));
  });
});

describe('the gateway.snapshot_age line without a snapshot', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  // The process's age is timed on the monotonic clock: on the wall clock, one stepped back an hour (NTP, a
  // VM resumed) held it at 0 for that hour, and Terraform's stale-gateway alert fired an hour late.
  it('counts the process age on the monotonic clock, whatever the wall clock did', async () => {
    // Only Date and performance are faked: the age log's interval and this test's waits run in real time.
    vi.useFakeTimers({ toFake: ['Date', 'performance'], now: Date.UTC(2026, 0, 1) });
    const lines: Array<Record<string, unknown>> = [];
    const gw = await startGateway(config(), {
      log: jsonLogger('info', (l) => lines.push(JSON.parse(l))),
      version: 't',
      source: silentSource,
      workerId: 'gw-step',
    });
    try {
      vi.setSystemTime(Date.now() - 3_600_000); // the wall clock only; performance.now() does not move
      vi.advanceTimersByTime(120_000); // both: two minutes of the process's life
      lines.length = 0;
      for (let i = 0; i < 100 && !lines.some((l) => l.event === 'gateway.snapshot_age'); i++)
        await new Promise((r) => setTimeout(r, 50));
    } finally {
      await gw.shutdown();
    }
    const age = lines.filter((l) => l.event === 'gateway.snapshot_age');
    expect(age.length).toBeGreaterThan(0);
    expect(age[0]).toMatchObject({ workerId: 'gw-step', snapshotVersion: null, ageSeconds: 120 });
  });
});
