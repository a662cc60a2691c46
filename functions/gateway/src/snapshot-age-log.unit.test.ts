// The `gateway.snapshot_age` line Terraform's stale-gateway alert is built on (terraform/monitoring.tf:
// the worker_snapshot_age distribution reads jsonPayload.ageSeconds by jsonPayload.workerId, and its
// absence condition fires when no worker logs it). Logged every GATEWAY_SNAPSHOT_AGE_LOG_SECONDS, at INFO,
// with every field the metric reads — also by a worker that never got a snapshot (then: the process's age).
import { describe, expect, it } from 'vitest';
import { missingContractFields } from '../../../shared/src/testing/log-contract.js';
import { loadGatewayConfig } from './config.js';
import { startGateway } from './gateway.js';
import { jsonLogger } from './logger.js';
import type { SnapshotSource } from './session.js';

/** Offers nothing: the worker runs without a snapshot, as one whose control plane never sends one. */
const silentSource: SnapshotSource = { start: async () => {}, stop: async () => {} };

describe('the gateway.snapshot_age line', () => {
  it('comes every GATEWAY_SNAPSHOT_AGE_LOG_SECONDS at INFO with the fields the stale-gateway metric reads', async () => {
    const cfg = loadGatewayConfig([], {
      GATEWAY_CLIENT_USERS: 'u:p',
      HOST: '127.0.0.1',
      PORT: '0',
      GATEWAY_PROXY_PORT: '0',
      GATEWAY_SNAPSHOT_AGE_LOG_SECONDS: '1',
      GATEWAY_DRAIN_TIMEOUT_MS: '0',
    });
    const lines: Array<Record<string, unknown>> = [];
    const gw = await startGateway(cfg, {
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
