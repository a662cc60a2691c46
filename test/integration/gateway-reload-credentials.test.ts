// Standalone mode's SIGHUP reload (docs/gateway.md § Standalone): a snapshot file whose upstream
// credentials changed must be served with the new ones at once — the credential cache in front of the
// file's values (GATEWAY_CREDENTIALS_TTL_SECONDS, pinned versions forever) must not keep the old password.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { snapshotFile } from '../../bench/support/snapshot-file.js';
import { loadGatewayConfig } from '../../functions/gateway/src/config.js';
import { type GatewayHandle, startGateway } from '../../functions/gateway/src/gateway.js';
import { jsonLogger } from '../../functions/gateway/src/logger.js';
import { tempDir } from '../support/temp-dirs.js';

const file = join(tempDir('gw-reload-'), 'snapshot.json');
const write = (password: string, version: number) =>
  writeFileSync(
    file,
    JSON.stringify(snapshotFile({ upstreams: [`http://up:${password}@127.0.0.1:9`], version })),
  );
let gw: GatewayHandle | null = null;

afterAll(async () => {
  await gw?.shutdown();
});

describe('standalone reload', () => {
  it('a reloaded file with new credentials is served with them, not with cached old ones', async () => {
    write('old-pass', 1);
    const cfg = loadGatewayConfig(['--snapshot', file], {
      PORT: '0',
      HOST: '127.0.0.1',
      GATEWAY_PROXY_PORT: 'off',
      GATEWAY_CLIENT_AUTH: 'none',
      LOG_LEVEL: 'error',
    });
    const lines: string[] = [];
    gw = await startGateway(cfg, { log: jsonLogger('warn', (l) => lines.push(l)), version: 't' });
    const user = () => {
      const auth = gw!.worker.snapshot()!.upstreams.get('p-0-0')!.auth.authorization;
      return Buffer.from(auth.slice('Basic '.length), 'base64').toString();
    };
    expect(user()).toBe('up:old-pass');
    write('new-pass', 2);
    await gw.reload();
    expect(gw.worker.snapshot()!.version).toBe(2);
    expect(user()).toBe('up:new-pass');
    // Credentials changed but not the version: a duplicate (they are not in the checksummed content),
    // kept as it is and said so.
    const doc = JSON.parse(readFileSync(file, 'utf8')) as { credentials: Record<string, string> };
    writeFileSync(file, JSON.stringify({ ...doc, credentials: { 'upstream-0': 'up:newer-pass' } }));
    await gw.reload();
    expect(user()).toBe('up:new-pass');
    expect(
      lines.some((l) => l.includes('bump the version to apply')),
      lines.join('\n'),
    ).toBe(true);
  });
});
