import { describe, expect, it } from 'vitest';
import { jsonLogger } from '../../../shared/src/adapters/log/json-logger.js';
import { missingContractFields } from '../../../shared/src/testing/log-contract.js';
import { logProbeRecorder, PROBE_RESULT_EVENT } from './probe-recorder.js';

describe('logProbeRecorder', () => {
  it('writes one INFO line per observation, with the fields the log-based metrics extract', () => {
    const lines: Array<Record<string, unknown>> = [];
    const log = jsonLogger({}, { level: 'info', write: (l) => lines.push(JSON.parse(l)) });
    const r = logProbeRecorder(log);
    r.observe('p1', { tier: 'BASIC', ok: false, latencyMs: 3001, code: 'timeout' });
    r.observe('p1', { tier: 'EGRESS', ok: true, latencyMs: 42, code: null });
    r.observe('p1', {
      tier: 'TARGET',
      route: 'shop',
      ok: false,
      latencyMs: 80,
      code: 'unexpected_status_403',
    });
    expect(lines).toEqual([
      expect.objectContaining({
        severity: 'INFO',
        message: 'probe',
        event: PROBE_RESULT_EVENT,
        proxy: 'p1',
        tier: 'BASIC',
        ok: false,
        latencyMs: 3001,
        code: 'timeout',
      }),
      expect.objectContaining({ event: PROBE_RESULT_EVENT, tier: 'EGRESS', ok: true, latencyMs: 42 }),
      expect.objectContaining({
        event: PROBE_RESULT_EVENT,
        tier: 'TARGET',
        route: 'shop',
        ok: false,
        code: 'unexpected_status_403',
      }),
    ]);
    // Every field terraform/monitoring.tf reads from the lines (shared/src/testing/log-contract.ts).
    expect(lines.map(missingContractFields)).toEqual([[], [], []]);
    // Only TARGET lines name a route.
    expect(lines.slice(0, 2).some((l) => 'route' in l)).toBe(false);
  });
});
