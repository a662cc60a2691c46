// The one place a PubSub client is built: the emulator when its host is given (local plane, tests),
// the real API otherwise. Passing the host explicitly, rather than relying on PUBSUB_EMULATOR_HOST,
// lets one process talk to more than one emulator (tests beside `npm start`).
import { PubSub } from '@google-cloud/pubsub';

export function createPubSub(projectId: string, emulatorHost?: string): PubSub {
  return new PubSub({
    projectId,
    ...(emulatorHost ? { apiEndpoint: emulatorHost, emulatorMode: true } : {}),
  });
}
