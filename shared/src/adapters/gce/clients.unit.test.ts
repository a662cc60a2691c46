import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);

// clients.ts takes the two compute clients from their own modules (see there why). A fresh process, as a
// cold start is: Vitest's workers share one module cache, so whether the index was loaded is only
// visible in a process of its own.
const PROBE = `
import { createRequire } from 'node:module';
const require = createRequire(import.meta.url);
await import('./shared/src/adapters/gce/clients.ts');
const loaded = Object.keys(require.cache).filter((k) => k.includes('@google-cloud/compute/build/'));
const viaIndexBefore = loaded.some((k) => k.endsWith('build/src/index.js') || k.endsWith('protos/protos.js'));
const own = await import('@google-cloud/compute/build/src/v1/instances_client.js');
const ops = await import('@google-cloud/compute/build/src/v1/zone_operations_client.js');
const index = require('@google-cloud/compute');
console.log(JSON.stringify({
  viaIndexBefore,
  loadedSome: loaded.length > 0,
  sameInstances: own.InstancesClient === index.InstancesClient,
  sameOperations: ops.ZoneOperationsClient === index.ZoneOperationsClient,
}));
`;

describe('the gce clients', () => {
  it('load from their own modules, never the package index, and are the classes the index exports', async () => {
    const { stdout } = await run(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', PROBE], {
      env: { ...process.env, METADATA_SERVER_DETECTION: 'none' },
      timeout: 60_000,
    });
    expect(JSON.parse(stdout.trim())).toEqual({
      viaIndexBefore: false,
      loadedSome: true,
      sameInstances: true,
      sameOperations: true,
    });
  }, 90_000);
});
