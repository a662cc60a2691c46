// The test harness's gateway spawner (bench/support/gateway-process.ts) gives a start-up a bounded wait.
// A gateway that never logs the line it waits for must not outlive that wait: left running it holds its
// ports and its snapshot subscription past the test, and past the run.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { spawnGatewayUntil } from '../../bench/support/gateway-process.js';
import { snapshotFile } from '../../bench/support/snapshot-file.js';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ESRCH') return false;
    throw err;
  }
}

describe('spawnGatewayUntil', () => {
  it('kills and reaps a gateway that never logs the awaited line, then rejects naming it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gw-start-timeout-'));
    try {
      const snapshotPath = join(dir, 'snapshot.json');
      writeFileSync(snapshotPath, JSON.stringify(snapshotFile({ upstreams: ['http://u:p@127.0.0.1:9'] })));
      const env = { GATEWAY_CLIENT_USERS: 'crawler:s3cret' };

      const failure = await spawnGatewayUntil(
        ['--snapshot', snapshotPath],
        env,
        'a line no gateway logs',
        undefined,
        4_000,
      ).then(
        () => expect.unreachable('a start that never logs the line must reject'),
        (err: Error) => err,
      );

      const pid = Number(/gateway \(pid (\d+)\) did not start; killed/.exec(failure.message)?.[1]);
      expect(pid).toBeGreaterThan(0);
      expect(alive(pid)).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 30_000);
});
