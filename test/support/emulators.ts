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

/**
 * clearProject at the end of a file, best effort: the project is this file's alone, so what is left only
 * costs the emulators memory. A failure is reported, never failed on — the Firestore emulator can refuse
 * the reset (409) for longer than clearFirestore retries while a transaction of a process the file just
 * stopped still holds its locks (one full-suite run: jobs-api, after its functions host stopped).
 */
export async function releaseProject(projectId: string): Promise<void> {
  try {
    await clearProject(projectId);
  } catch (err) {
    console.warn(`project ${projectId} left uncleared: ${(err as Error).message}`);
  }
}
