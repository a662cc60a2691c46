// `npm run emulators`: the Google emulators alone on the firebase.json ports, until Ctrl-C.
import { loadLocalPorts } from '../../shared/src/config/local-ports.js';
import { startGoogleEmulators } from './google-emulators.js';

const ports = loadLocalPorts();
const projectId = process.env.GOOGLE_CLOUD_PROJECT ?? 'demo-proxyplane';
const emus = await startGoogleEmulators({ firestore: ports.firestore, pubsub: ports.pubsub, projectId });
for (const [k, v] of Object.entries(emus.env)) console.log(`export ${k}=${v}`);
const shutdown = async () => {
  await emus.stop();
  process.exit(0);
};
process.once('SIGINT', shutdown);
process.once('SIGTERM', shutdown);
