import { describe, expect, it } from 'vitest';
import { loadApiConfig } from '../config.js';

const tokens = { ADMIN_TOKENS: 'ci:0123456789abcdef0123456789abcdef' };

describe('where /v1/jobs finds Cloud Scheduler', () => {
  it.each([
    ['deployed: Cloud Scheduler in REGION', { REGION: 'europe-west1' }, { location: 'europe-west1' }],
    ['deployed, default region', {}, { location: 'us-central1' }],
    [
      'local plane: the local scheduler',
      { FIRESTORE_EMULATOR_HOST: '127.0.0.1:1', SCHEDULER_EMULATOR_HOST: '127.0.0.1:18170' },
      { location: 'us-central1', emulatorHost: '127.0.0.1:18170' },
    ],
    ['local without a scheduler: none', { FIRESTORE_EMULATOR_HOST: '127.0.0.1:1' }, null],
    ['PROXYPLANE_LOCAL without a scheduler: none', { PROXYPLANE_LOCAL: '1' }, null],
  ])('%s', (_, env, expected) => {
    const config = loadApiConfig({ ...tokens, ...env });
    expect(config.scheduler).toEqual(expected === null ? null : { emulatorHost: undefined, ...expected });
  });
});
