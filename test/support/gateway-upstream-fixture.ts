// For a test file that starts the gateway in process: the bench's targets, one upstream forward proxy
// (credentials up:up-pass) and a snapshot file naming it, set up before the file's tests and closed after.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { snapshotFile } from '../../bench/support/snapshot-file.js';
import { startTargets, type Targets } from '../../bench/support/targets.js';
import { createForwardProxy, type ForwardProxy } from '../../emulators/forward-proxy/proxy.js';
import { type GatewayConfig, loadGatewayConfig } from '../../functions/gateway/src/config.js';
import { tempDir } from './temp-dirs.js';

export interface UpstreamFixture {
  readonly targets: Targets;
  readonly upstream: ForwardProxy;
  /** The snapshot file, for `--snapshot`. */
  readonly file: string;
  /**
   * A gateway's configuration from that file: both listeners on free loopback ports, no client
   * authentication, errors only in the log — plus `env` (the SSRF allow-list, the drain bound, …).
   */
  config(env: Record<string, string>): GatewayConfig;
}

/** Registers the file's beforeAll/afterAll; read the fields inside tests (they are set by then). */
export function upstreamFixture(): UpstreamFixture {
  const f = {
    config: (env: Record<string, string>) =>
      loadGatewayConfig(['--snapshot', f.file], {
        PORT: '0',
        GATEWAY_PROXY_PORT: '0',
        HOST: '127.0.0.1',
        GATEWAY_CLIENT_AUTH: 'none',
        LOG_LEVEL: 'error',
        ...env,
      }),
  } as UpstreamFixture & { targets: Targets; upstream: ForwardProxy; file: string };
  beforeAll(async () => {
    f.targets = await startTargets();
    f.upstream = createForwardProxy({ credentials: 'up:up-pass' });
    const { port } = await f.upstream.listen();
    f.file = join(tempDir('gw-upstream-'), 'snapshot.json');
    writeFileSync(
      f.file,
      JSON.stringify(snapshotFile({ upstreams: [`http://up:up-pass@127.0.0.1:${port}`] })),
    );
  });
  afterAll(async () => {
    await f.upstream?.close();
    await f.targets?.close();
  });
  return f;
}
