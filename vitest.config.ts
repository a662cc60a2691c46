import { defineConfig } from 'vitest/config';

// Two tiers: unit tests (*.unit.test.ts, beside the code) need no emulator; everything under test/
// runs against the emulators that test/support/global-setup.ts starts once for the whole run.
export default defineConfig({
  test: {
    env: { METADATA_SERVER_DETECTION: 'none' },
    projects: [
      {
        test: {
          name: 'unit',
          sequence: { groupOrder: 0 },
          include: [
            'shared/**/*.unit.test.ts',
            'functions/**/*.unit.test.ts',
            'emulators/**/*.unit.test.ts',
            'cli/**/*.unit.test.ts',
            'bench/**/*.unit.test.ts',
          ],
          environment: 'node',
          env: { METADATA_SERVER_DETECTION: 'none' },
        },
      },
      {
        test: {
          name: 'integration',
          sequence: { groupOrder: 1 },
          include: ['test/**/*.test.ts'],
          environment: 'node',
          env: { METADATA_SERVER_DETECTION: 'none' },
          globalSetup: ['test/support/global-setup.ts'],
          testTimeout: 60_000,
          hookTimeout: 120_000,
          // Two cores: a few files at a time keeps the emulators responsive.
          maxWorkers: 2,
        },
      },
    ],
  },
});
