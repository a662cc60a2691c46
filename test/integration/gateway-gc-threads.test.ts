// The gateway is started with `node --single-threaded-gc` (functions/gateway/src/gc-threads.ts: Terraform's
// gateway_gc_threads, the local plane, the benchmarks). This checks that the flag does what it is there for
// in this Node — V8's GC helper threads stop spending CPU beside the main thread — and that a gateway
// process reports how it was started. How much CPU it saves is measured by bench/gateway.ts and by hand
// (docs/gateway.md § GC threads), not here.
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  type GatewayProcess,
  type StartingGateway,
  spawnGatewayUntil,
  startGateway,
} from '../../bench/support/gateway-process.js';
import { snapshotFile } from '../../bench/support/snapshot-file.js';
import { SINGLE_THREADED_GC } from '../../functions/gateway/src/gc-threads.js';

const fixture = join(import.meta.dirname, '../fixtures/gc-threads/helper-cpu.mts');
const threadTicks = (nodeArgs: string[]): { main: number; others: number } =>
  JSON.parse(
    execFileSync(process.execPath, [...nodeArgs, '--import', 'tsx', fixture, '1500'], { encoding: 'utf8' }),
  );

describe('gateway GC threads', () => {
  it('with --single-threaded-gc the GC work stays on the main thread; without it helper threads share it', () => {
    const parallel = threadTicks([]);
    const single = threadTicks([SINGLE_THREADED_GC]);
    expect(single.main).toBeGreaterThan(0);
    // Measured: 89–97 ticks of 370 on helpers by default, 3–4 with the flag (module loading's own).
    expect(parallel.others).toBeGreaterThan(4 * single.others + 10);
  });

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
