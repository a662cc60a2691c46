import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { gatewayExtraCaEnv } from './gateway-trust.js';

const DEMO = '-----BEGIN CERTIFICATE-----\ndemo\n-----END CERTIFICATE-----\n';
const OWN = '-----BEGIN CERTIFICATE-----\ncorporate\n-----END CERTIFICATE-----\n';

describe('gatewayExtraCaEnv', () => {
  let dir: string;
  let demoCertPath: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'pp-gateway-trust-'));
    demoCertPath = join(dir, 'cert.pem');
    await writeFile(demoCertPath, DEMO);
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  it('trusts the demo certificate when the developer set no extra CAs', async () => {
    expect(await gatewayExtraCaEnv({ demoCertPath, env: {}, dir: join(dir, 'gateway') })).toEqual({
      NODE_EXTRA_CA_CERTS: demoCertPath,
    });
  });

  it("bundles the developer's own extra CAs with the demo certificate: Node takes one file", async () => {
    const own = join(dir, 'own.pem');
    await writeFile(own, OWN);
    const env = await gatewayExtraCaEnv({
      demoCertPath,
      env: { NODE_EXTRA_CA_CERTS: own },
      dir: join(dir, 'gateway'),
    });
    expect(env.NODE_EXTRA_CA_CERTS).toBe(join(dir, 'gateway', 'extra-ca.pem'));
    expect(await readFile(env.NODE_EXTRA_CA_CERTS!, 'utf8')).toBe(`${OWN}${DEMO}`);
  });

  it('goes on with the demo certificate alone when the developer file cannot be read', async () => {
    const env = await gatewayExtraCaEnv({
      demoCertPath,
      env: { NODE_EXTRA_CA_CERTS: join(dir, 'missing.pem') },
      dir: join(dir, 'gateway'),
    });
    expect(env).toEqual({ NODE_EXTRA_CA_CERTS: demoCertPath });
  });

  it("leaves the developer's setting alone without a demo certificate (--no-demo, no openssl)", async () => {
    expect(
      await gatewayExtraCaEnv({
        demoCertPath: undefined,
        env: { NODE_EXTRA_CA_CERTS: '/etc/own.pem' },
        dir: join(dir, 'gateway'),
      }),
    ).toEqual({});
  });
});
