import { defineConfig } from 'vitest/config';
import { SlowFirstSequencer } from './test/support/slow-first-sequencer.js';

// Two tiers: unit tests (*.unit.test.ts, beside the code) need no emulator; everything under test/
// runs against the emulators that test/support/global-setup.ts starts once for the whole run.
// Neither tier isolates its files: a worker imports the SDKs and the sources once and runs file after
// file on them (the unit tier in a fifth of the time). No test stubs modules or mutates process.env, and
// every metrics registry, client and server is made per test; the fixtures' counters start again before
// each file (test/support/per-file-setup.ts), so a file's test data does not depend on its neighbours.
// Offline there is no metadata server to find. Set in this process, the workers inherit it from their
// first import on; the per-project `env` below alone did not reach every client: with the variable not
// exported, gce-provider-deadline.unit.test.ts lost the compute client's first attempts to a
// metadata-server probe and failed, so the README's `npm test` depended on the caller's shell.
process.env.METADATA_SERVER_DETECTION ??= 'none';

// A failed assertion prints the values it compared whole up to this many characters (chai's default, 40,
// cut a 409's body to `{ …(2) }`: a CI failure under load did not say which refusal it was).
const FAILURE_DETAIL = { truncateThreshold: 2_000 };

export default defineConfig({
  test: {
    env: { METADATA_SERVER_DETECTION: 'none' },
    sequence: { sequencer: SlowFirstSequencer },
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
            'terraform/**/*.unit.test.ts',
          ],
          environment: 'node',
          env: { METADATA_SERVER_DETECTION: 'none' },
          setupFiles: ['test/support/per-file-setup.ts'],
          isolate: false,
          chaiConfig: FAILURE_DETAIL,
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
          setupFiles: ['test/support/per-file-setup.ts'],
          testTimeout: 60_000,
          hookTimeout: 120_000,
          // Three files at a time on two cores: with two, a quarter of the CPU sat idle while tests waited
          // on processes, timers and the emulators (vmstat over a whole run: 26 % idle; 9 % with three),
          // and the run took 769 s instead of 615 s. More would slow the emulators for every file.
          maxWorkers: 3,
          isolate: false,
          chaiConfig: FAILURE_DETAIL,
        },
      },
    ],
  },
});
