import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSecretManagerClient } from '../../shared/src/adapters/secret-manager/client.js';
import { type SecretManagerEmulator, startSecretManagerEmulator } from '../secret-manager/server.js';
import { DEMO_SECRET } from './demo-fleet.js';
import { ensureDemoSecret } from './demo-secret.js';

const projectId = 'demo-secret-unit';
let emulator: SecretManagerEmulator;

beforeAll(async () => {
  emulator = await startSecretManagerEmulator({ log: () => {} });
});
afterAll(async () => emulator?.stop());

describe('ensureDemoSecret', () => {
  it('creates the secret notifying secret-events, as deployed: its rotations reach the rotation function', async () => {
    const emulatorHost = `${emulator.host}:${emulator.port}`;
    const value = await ensureDemoSecret({ emulatorHost, projectId });
    expect(value).toMatch(/^[^:]+:.+$/);
    const client = createSecretManagerClient(emulatorHost);
    try {
      const [secret] = await client.getSecret({ name: `projects/${projectId}/secrets/${DEMO_SECRET}` });
      expect(secret.topics?.map((t) => t.name)).toEqual([`projects/${projectId}/topics/secret-events`]);
    } finally {
      await client.close();
    }
  });
});
