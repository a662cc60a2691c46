// The gateway is started with `node --single-threaded-gc` (functions/gateway/src/gc-threads.ts: Terraform's
// gateway_gc_threads, the local plane, the benchmarks). This checks that a gateway process started that way
// runs with it and says so. What the flag saves is measured by bench/gateway.ts and by hand (docs/gateway.md
// § GC threads), not here: CPU time is no test's to assert.
import { afterEach, describe, expect, it } from 'vitest';
import {
  type GatewayProcess,
  type StartingGateway,
  spawnGatewayUntil,
  startGateway,
} from '../../bench/support/gateway-process.js';
import { snapshotFile } from '../../bench/support/snapshot-file.js';

describe('gateway GC threads', () => {
  const started: Array<GatewayProcess | StartingGateway> = [];
  afterEach(async () => {
    await Promise.all(started.splice(0).map((gw) => gw.stop()));
  });

  const env = { GATEWAY_CLIENT_USERS: 'crawler:s3cret' };
  const listening = (gw: StartingGateway) => gw.logEntries().find((l) => l.message === 'gateway listening');

  it('a gateway started as Terraform starts it says gcThreads single; with no flag, parallel', async () => {
    const snapshot = snapshotFile({ upstreams: ['http://u:p@127.0.0.1:9'] });
    const asDeployed = await startGateway(snapshot, env);
    started.push(asDeployed);
    expect(listening(asDeployed)).toMatchObject({ gcThreads: 'single' });
    const bare = await spawnGatewayUntil(
      ['--snapshot', asDeployed.snapshotPath],
      env,
      'gateway listening',
      [],
    );
    started.push(bare);
    expect(bare.line).toMatchObject({ gcThreads: 'parallel' });
  });
});
