// The gateway sets V8's marking mode at start-up (gc-marking.ts, GATEWAY_GC_MARKING, atomic by default).
// This checks that the flag, set at run time, really takes effect in this Node — a V8 that froze its flags
// after start-up would ignore it — on a workload that grows the old generation past where V8 starts
// incremental marking, and which mode a real gateway process applies. Which mode is faster where is measured by bench/gateway.ts and
// by hand (docs/gateway.md § Performance), not here.
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type GatewayProcess, startGateway } from '../../bench/support/gateway-process.js';
import { snapshotFile } from '../../bench/support/snapshot-file.js';

const fixture = join(import.meta.dirname, '../fixtures/gc-marking/gc-kinds.mts');
const gcKinds = (mode: string): { major: number; minor: number; incremental: number } =>
  JSON.parse(execFileSync(process.execPath, ['--import', 'tsx', fixture, mode], { encoding: 'utf8' }));

describe('gateway GC marking mode', () => {
  it('"atomic" runs full GCs with no incremental marking; "incremental" marks incrementally', () => {
    const atomic = gcKinds('atomic');
    expect(atomic.major).toBeGreaterThan(0);
    expect(atomic.incremental).toBe(0);
    const incremental = gcKinds('incremental');
    expect(incremental.incremental).toBeGreaterThan(0);
  });

  const started: GatewayProcess[] = [];
  afterEach(async () => {
    await Promise.all(started.splice(0).map((gw) => gw.stop()));
  });

  it.each([
    [{}, 'atomic'],
    [{ GATEWAY_GC_MARKING: 'incremental' }, 'incremental'],
  ])('a gateway started with %j marks %s', async (env, mode) => {
    const gw = await startGateway(snapshotFile({ upstreams: ['http://u:p@127.0.0.1:9'] }), {
      GATEWAY_CLIENT_USERS: 'crawler:s3cret',
      ...env,
    });
    started.push(gw);
    expect(gw.logEntries().find((l) => l.message === 'gateway listening')).toMatchObject({ gcMarking: mode });
  });
});
