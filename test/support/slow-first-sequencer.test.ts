// The fresh-clone order (slow-first-sequencer.ts) must see every file that starts a plane: the demo's
// `npm start` (useDemoPlane), the longest file of the run, once read as starting nothing and ran wherever
// its byte size put it (70th of 165), a place only luck kept from the run's tail.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../../shared/src/config/local-ports.js';
import { startupWeight } from './slow-first-sequencer.js';

const weightOf = (file: string) => startupWeight(readFileSync(join(repoRoot, file), 'utf8'));

describe('startupWeight', () => {
  it('puts the `npm start` file first, then every file that starts a plane or the CLI', () => {
    expect(weightOf('test/e2e/local-plane.test.ts')).toBe(2);
    for (const file of [
      'test/e2e/demo.test.ts',
      'test/e2e/gateway.test.ts',
      'test/integration/gateway-session.test.ts',
      'test/integration/rotation-rolling.test.ts',
      'test/integration/cli.test.ts',
    ])
      expect([file, weightOf(file)]).toEqual([file, 1]);
  });

  it('leaves a file that starts nothing of its own at 0', () => {
    expect(weightOf('test/docs/settings.test.ts')).toBe(0);
  });
});
