import { describe, expect, it } from 'vitest';
import { startGroup } from './process-group.js';

describe('startGroup: exited', () => {
  it('settles with the exit code of a command that dies after it started, through its group leader', async () => {
    // As an emulator JVM runs (group-leader.mjs passes its code on): up a while, then gone unasked.
    const g = startGroup({
      name: 'crashing',
      command: process.execPath,
      args: ['-e', 'setTimeout(() => process.exit(3), 200)'],
      exitWithParent: true,
    });
    try {
      expect(await g.exited).toEqual({ code: 3 });
    } finally {
      await g.stop();
    }
  });
});
