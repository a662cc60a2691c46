// For a test file that starts the gateway in process: the bench's targets, one upstream forward proxy
// (credentials up:up-pass) and a snapshot file naming it, set up before the file's tests and closed after.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { snapshotFile } from '../../bench/support/snapshot-file.js';
import { startTargets, type Targets } from '../../bench/support/targets.js';
import { createForwardProxy, type ForwardProxy } from '../../emulators/forward-proxy/proxy.js';

export interface UpstreamFixture {
  readonly targets: Targets;
  readonly upstream: ForwardProxy;
  /** The snapshot file, for `--snapshot`. */
  readonly file: string;
}

/** Registers the file's beforeAll/afterAll; read the fields inside tests (they are set by then). */
export function upstreamFixture(): UpstreamFixture {
  const f = {} as { targets: Targets; upstream: ForwardProxy; file: string };
  beforeAll(async () => {
    f.targets = await startTargets();
    f.upstream = createForwardProxy({ credentials: 'up:up-pass' });
    const { port } = await f.upstream.listen();
    f.file = join(mkdtempSync(join(tmpdir(), 'gw-upstream-')), 'snapshot.json');
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
