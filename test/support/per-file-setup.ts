// Runs before every test file, in both tiers (vitest.config.ts setupFiles). The files of a worker share
// one module registry (isolate: false), so module-level state of the test fixtures would carry from file
// to file: it starts again here, and a file sees the same fixtures whichever files ran before it.
import { resetTestUids } from '../../shared/src/testing/proxy-fixtures.js';

resetTestUids();
