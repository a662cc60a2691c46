// Per-file isolation on the shared emulators: each test file gets its own project, cleared on demand.
import { randomBytes } from 'node:crypto';
import { clearFirestore, clearPubSub } from '../../emulators/launcher/clear.js';
import type { HostPort } from '../../shared/src/config/local-ports.js';

function parseHostPort(value: string | undefined, name: string): HostPort {
  if (!value) throw new Error(`${name} is not set: integration tests run under test/support/global-setup.ts`);
  const i = value.lastIndexOf(':');
  return { host: value.slice(0, i), port: Number(value.slice(i + 1)) };
}

export const firestoreHost = (): HostPort =>
  parseHostPort(process.env.FIRESTORE_EMULATOR_HOST, 'FIRESTORE_EMULATOR_HOST');
export const pubsubHost = (): HostPort =>
  parseHostPort(process.env.PUBSUB_EMULATOR_HOST, 'PUBSUB_EMULATOR_HOST');

/** A fresh project id: Firestore and Pub/Sub emulators isolate projects, so files never see each other. */
export function testProjectId(prefix = 'demo-t'): string {
  return `${prefix}-${randomBytes(4).toString('hex')}`;
}

export async function clearProject(projectId: string): Promise<void> {
  await Promise.all([clearFirestore(firestoreHost(), projectId), clearPubSub(pubsubHost(), projectId)]);
}
