// `node --import tsx emulators/secret-manager/main.ts`: the Secret Manager emulator alone, on
// SECRET_MANAGER_EMULATOR_HOST or firebase.json's `secretmanager` port, publishing notifications to
// PUBSUB_EMULATOR_HOST when it is set.
import { PubSub } from '@google-cloud/pubsub';
import { hostPort, loadLocalPorts } from '../../shared/src/config/local-ports.js';
import { startSecretManagerEmulator } from './server.js';

const endpoint = process.env.SECRET_MANAGER_EMULATOR_HOST ?? hostPort(loadLocalPorts().secretmanager);
const i = endpoint.lastIndexOf(':');
const pubsub = process.env.PUBSUB_EMULATOR_HOST
  ? new PubSub({ projectId: process.env.GOOGLE_CLOUD_PROJECT ?? 'demo-proxyplane' })
  : undefined;
const emulator = await startSecretManagerEmulator({
  host: endpoint.slice(0, i),
  port: Number(endpoint.slice(i + 1)),
  pubsub,
});
console.log(`export SECRET_MANAGER_EMULATOR_HOST=${emulator.host}:${emulator.port}`);
const shutdown = async () => {
  await emulator.stop();
  await pubsub?.close();
  process.exit(0);
};
process.once('SIGINT', shutdown);
process.once('SIGTERM', shutdown);
