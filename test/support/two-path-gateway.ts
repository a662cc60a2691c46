// A standalone gateway in process over the scripted upstream (test/support/scripted-proxy.ts) on both
// plain-HTTP paths: one route per path, each to its own host — `absolute`, an upstream marked
// filtersDestinations (absolute form over pooled connections), and `pinned`, the same upstream unmarked
// (a CONNECT tunnel to itself, then the request) — and the SSRF guard allowing exactly those two hosts.
// What the truncated-answer, drain-cut, fetch-tail and fetch-chunked tests share.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { snapshotFile } from '../../bench/support/snapshot-file.js';
import { loadGatewayConfig } from '../../functions/gateway/src/config.js';
import { type GatewayHandle, startGateway } from '../../functions/gateway/src/gateway.js';
import { jsonLogger } from '../../functions/gateway/src/logger.js';
import type { Reporter } from '../../functions/gateway/src/session.js';
import { tempDir } from './temp-dirs.js';

/** The two routes' target hosts: distinct loopback addresses per test file. */
export interface TwoPathHosts {
  absolute: string;
  pinned: string;
}

/** The snapshot of the two routes over the upstream listening on `port` (a gateway process takes it). */
export function twoPathSnapshotContent(port: number, hosts: TwoPathHosts) {
  return snapshotFile({
    upstreams: [`http://up:up-pass@127.0.0.1:${port}`, `http://up:up-pass@127.0.0.1:${port}`],
    attributes: (i) => ({ pool: i === 0 ? 'absolute' : 'pinned' }),
    filtersDestinations: (i) => i === 0,
    routing: (['absolute', 'pinned'] as const).map((name) => ({
      name,
      match: { hosts: [hosts[name]] },
      selector: { pool: name },
      policy: 'round-robin' as const,
    })),
  });
}

/** Writes the snapshot file of the two routes over the scripted upstream listening on `port`. */
export function twoPathSnapshot(port: number, hosts: TwoPathHosts): string {
  const file = join(tempDir('gw-two-path-'), 'snapshot.json');
  writeFileSync(file, JSON.stringify(twoPathSnapshotContent(port, hosts)));
  return file;
}

/** Starts the gateway on `file` (ports chosen by the kernel, no client auth); `env` adds to its variables. */
export function startTwoPathGateway(
  file: string,
  hosts: TwoPathHosts,
  opts: { reporter?: Reporter; env?: Record<string, string> } = {},
): Promise<GatewayHandle> {
  const cfg = loadGatewayConfig(['--snapshot', file], {
    PORT: '0',
    GATEWAY_PROXY_PORT: '0',
    HOST: '127.0.0.1',
    GATEWAY_CLIENT_AUTH: 'none',
    LOG_LEVEL: 'error',
    GATEWAY_SSRF_ALLOW: Object.values(hosts)
      .map((h) => `${h}:80`)
      .join(','),
    ...opts.env,
  });
  return startGateway(cfg, {
    log: jsonLogger('error', () => {}),
    version: 't',
    reporter: opts.reporter ?? { start: () => {}, stop: async () => {} },
  });
}
