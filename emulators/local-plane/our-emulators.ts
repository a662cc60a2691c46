// Our emulators of the Google APIs with no SDK emulator: Secret Manager (notifications published on
// the Pub/Sub emulator) and Compute Engine, whose VMs read their proxy credentials from that Secret
// Manager as the deployed startup script does. Both run in this process; logs go to the log dir.
import { join } from 'node:path';
import type { PubSub } from '@google-cloud/pubsub';
import { createSecretManagerClient } from '../../shared/src/adapters/secret-manager/client.js';
import { type HostPort, hostPort } from '../../shared/src/config/local-ports.js';
import { jsonLineLog } from '../compute/log.js';
import { credentialsFromSecretManager } from '../compute/secret-credentials.js';
import { startComputeEmulator } from '../compute/server.js';
import { startSecretManagerEmulator } from '../secret-manager/server.js';
import { appendLines } from './log-file.js';

export interface OurEmulatorsOptions {
  compute: HostPort;
  secretmanager: HostPort;
  projectId: string;
  pubsub: PubSub;
  logDir: string;
  /**
   * The API's port: every emulated VM lets CONNECT reach it, as every deployed VM's squid lets CONNECT
   * reach the deployed API's 443 — the probe's BASIC handshake goes to its echo URL's port.
   */
  apiPort: number;
  /** Called as each piece is up, with how to stop it. */
  onUp(name: string, url: string, stop: () => Promise<void>): void;
}

/**
 * The plane's project has a number here, as on GCP: Secret Manager answers every name with it (code that
 * compared a returned name with one built from the project ID would fail locally as it would deployed).
 */
export const LOCAL_PROJECT_NUMBER = '100000000001';

const fileLog = (component: string, file: string) => jsonLineLog(component, appendLines(file));

export async function startOurEmulators(opts: OurEmulatorsOptions): Promise<void> {
  // Secret Manager as deployed (terraform/secrets.tf): roles granted on each secret, none on the project,
  // so a deleted secret answers PERMISSION_DENIED, not NOT_FOUND — deleting a secret under `npm start`
  // does what it does on GCP (the proxies serving it wait their turn: docs/gc-and-rotation.md), not
  // what it would do with project-wide roles (revoked at once).
  const secrets = await startSecretManagerEmulator({
    ...opts.secretmanager,
    perSecretIam: true,
    projectNumbers: { [opts.projectId]: LOCAL_PROJECT_NUMBER },
    pubsub: opts.pubsub,
    log: fileLog('secret-manager-emulator', join(opts.logDir, 'secretmanager.log')),
  });
  opts.onUp('secret manager emulator', secrets.url, () => secrets.stop());

  const client = createSecretManagerClient(hostPort(opts.secretmanager));
  try {
    const compute = await startComputeEmulator({
      ...opts.compute,
      projectId: opts.projectId,
      hostConnectPorts: [opts.apiPort],
      resolveCredentials: credentialsFromSecretManager(client),
      log: fileLog('compute-emulator', join(opts.logDir, 'compute.log')),
    });
    opts.onUp('compute emulator', compute.url, async () => {
      await compute.stop();
      await client.close();
    });
  } catch (err) {
    await client.close();
    throw err;
  }
}
