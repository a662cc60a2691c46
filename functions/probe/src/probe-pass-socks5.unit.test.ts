// The probe pass hands the prober what the proxy speaks: an external SOCKS5 endpoint is probed over
// SOCKS5 (shared/src/adapters/probe/proxy-probe.ts), everything else over HTTP.
import { describe, expect, it } from 'vitest';
import type { ProbeTarget } from '../../../shared/src/adapters/probe/proxy-probe.js';
import { inMemoryHealthStore } from '../../../shared/src/testing/in-memory-health-store.js';
import { aProxy, externalSpec, managedSpec } from '../../../shared/src/testing/proxy-fixtures.js';
import { RecordingReconcilePublisher } from '../../../shared/src/testing/recording-publisher.js';
import { noOutcomes } from './passive-fixtures.unit.js';
import { type ProbeDeps, probeable, runProbePass } from './probe-pass.js';
import { echoUp } from './prober-fixtures.unit.js';

const t0 = new Date('2026-01-01T00:00:00Z');

/** Deps whose prober records each target it is handed (by host) and answers healthy. */
function recordingDeps(secret: string) {
  const targets = new Map<string, ProbeTarget>();
  const ok = { ok: true, latencyMs: 5, status: 200, body: null, failure: null };
  const record = async (t: ProbeTarget) => {
    targets.set(t.host, t);
    return ok;
  };
  const deps: ProbeDeps = {
    health: inMemoryHealthStore(new Map()),
    publisher: new RecordingReconcilePublisher(),
    secrets: { access: async () => secret },
    prober: { direct: echoUp, handshake: record, probe: record },
    log: { info: () => {}, warn: () => {} },
    recorder: { observe: () => {} },
    tiers: { echoUrl: null, callerIps: [], rejectUnauthorized: true },
    concurrency: 4,
    passive: noOutcomes(),
  };
  return { targets, deps };
}

describe('runProbePass: the protocol each proxy is probed in', () => {
  it('an external socks5 endpoint as socks5 (with its credentials), others as http', async () => {
    const { targets, deps } = recordingDeps('user:pass\n');
    const socks = externalSpec({
      endpoint: { host: '203.0.113.7', port: 1080, protocol: 'socks5' },
      credentialsRef: { secret: 'res-creds' },
    });
    const proxies = [
      aProxy({ name: 'res', spec: socks, status: { ip: '203.0.113.7' } }),
      aProxy({
        name: 'ext',
        spec: externalSpec({ endpoint: { host: '198.51.100.9', port: 3128 } }),
        status: { ip: '198.51.100.9' },
      }),
      aProxy({ name: 'vm', status: { ip: '10.0.0.1', providerId: 'zones/z/instances/vm' } }),
    ];
    const intervalMs = proxies[0]!.spec.healthCheck.intervalSeconds * 1000;
    await runProbePass(deps, proxies, t0, new Date(t0.getTime() + intervalMs));
    expect(Object.fromEntries([...targets].map(([host, t]) => [host, t.protocol]))).toEqual({
      '203.0.113.7': 'socks5',
      '198.51.100.9': 'http',
      '10.0.0.1': 'http',
    });
    expect(targets.get('203.0.113.7')).toMatchObject({ port: 1080, credentials: 'user:pass' });
  });

  it("an external proxy with its provider's long username, which a managed proxy's VM refuses", async () => {
    const user = 'customer-c1-zone-residential_proxy1-country-us-city-newyork-session-12345678';
    const { targets, deps } = recordingDeps(`${user}:pass`);
    const proxies = [
      aProxy({
        name: 'res',
        spec: externalSpec({
          endpoint: { host: '203.0.113.7', port: 1080 },
          credentialsRef: { secret: 'res' },
        }),
        status: { ip: '203.0.113.7' },
      }),
      aProxy({
        name: 'vm',
        spec: managedSpec({ credentialsRef: { secret: 'res' } }),
        status: { ip: '10.0.0.1', providerId: 'zones/z/instances/vm' },
      }),
    ];
    const intervalMs = proxies[0]!.spec.healthCheck.intervalSeconds * 1000;
    await runProbePass(deps, proxies, t0, new Date(t0.getTime() + intervalMs));
    expect(targets.get('203.0.113.7')?.credentials).toBe(`${user}:pass`);
    expect(targets.get('10.0.0.1')?.credentials).toBeNull();
  });
});

describe('probeable: an external proxy whose endpoint was edited and not yet reconciled', () => {
  it('is not dialed: its address is the old host, its port and credentials the new spec’s', () => {
    const spec = externalSpec({ endpoint: { host: 'new.example', port: 3128 } });
    expect(probeable(aProxy({ name: 'moved', spec, status: { ip: 'new.example' } }))).toBe(true);
    expect(probeable(aProxy({ name: 'moved', spec, status: { ip: 'old.example' } }))).toBe(false);
  });
});
