// Runs before every test file, in both tiers (vitest.config.ts setupFiles). The files of a worker share
// one module registry (isolate: false), so module-level state of the test fixtures would carry from file
// to file: it starts again here, and a file sees the same fixtures whichever files ran before it. The
// temporary directories a file made go once its tests have run.
import { afterAll } from 'vitest';
import { resetTestUids } from '../../shared/src/testing/proxy-fixtures.js';
import { removeTempDirs } from './temp-dirs.js';

resetTestUids();
afterAll(removeTempDirs);
