// Starts the Firestore and Pub/Sub emulators once for the integration run, on free ports so that the
// suite can run beside `npm start`, and stops them (with every JVM) at the end. Workers inherit the env.
// Also installs the Debian tools some tests run, when missing (debian-tools.ts).
import { freePort } from '../../emulators/launcher/free-port.js';
import { startGoogleEmulators } from '../../emulators/launcher/google-emulators.js';
import { startToolInstall } from './debian-tools.js';

export default async function setup(): Promise<() => Promise<void>> {
  // In the background: the files that need one of these tools wait for it (debian-tools.ts).
  const tools = startToolInstall();
  if (process.env.FIRESTORE_EMULATOR_HOST && process.env.PUBSUB_EMULATOR_HOST) {
    return () => tools;
  }
  const host = '127.0.0.1';
  const emus = await startGoogleEmulators({
    firestore: { host, port: await freePort() },
    pubsub: { host, port: await freePort() },
    projectId: 'demo-test',
    logDir: 'test-artifacts/emulators',
  });
  Object.assign(process.env, emus.env);
  return async () => {
    await emus.stop();
    await tools;
  };
}
