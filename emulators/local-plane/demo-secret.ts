// The demo proxies' credentials: one Secret Manager secret (`username:password`, the format
// parseProxyCredentials reads) created in the emulator with the real client, as an operator would with
// `gcloud secrets create`. A secret left from an earlier run keeps its value (its latest version is read).
import { randomBytes } from 'node:crypto';
import { createSecretManagerClient } from '../../shared/src/adapters/secret-manager/client.js';
import { loadFunctionTable } from '../../shared/src/config/topology.js';
import { DEMO_SECRET, DEMO_USERNAME } from './demo-fleet.js';

const ALREADY_EXISTS = 6;

/**
 * The topic every deployed secret notifies (terraform/secrets.tf, `--topics` in docs/deploy.md): the
 * rotation function's. Without it a new version of the demo secret reached no proxy locally.
 */
const rotationTopic = (projectId: string): string =>
  `projects/${projectId}/topics/${loadFunctionTable().functions.rotation!.topic}`;

export async function ensureDemoSecret(opts: { emulatorHost: string; projectId: string }): Promise<string> {
  const client = createSecretManagerClient(opts.emulatorHost);
  const name = `projects/${opts.projectId}/secrets/${DEMO_SECRET}`;
  try {
    try {
      await client.createSecret({
        parent: `projects/${opts.projectId}`,
        secretId: DEMO_SECRET,
        secret: {
          replication: { automatic: {} },
          labels: { purpose: 'proxyplane-demo' },
          topics: [{ name: rotationTopic(opts.projectId) }],
        },
      });
    } catch (err) {
      if ((err as { code?: number }).code !== ALREADY_EXISTS) throw err;
      const [latest] = await client.accessSecretVersion({ name: `${name}/versions/latest` });
      const existing = latest.payload?.data
        ? Buffer.from(latest.payload.data as Uint8Array).toString('utf8')
        : '';
      if (existing.includes(':')) return existing;
    }
    const value = `${DEMO_USERNAME}:${randomBytes(12).toString('base64url')}`;
    await client.addSecretVersion({ parent: name, payload: { data: Buffer.from(value, 'utf8') } });
    return value;
  } finally {
    await client.close();
  }
}
