// One `npm start` with the demo, shared by every suite of a test file: started before the first test
// (the demo fleet Ready and the demo's instructions printed, as a newcomer sees them), stopped with Ctrl-C
// after the last, and a clean exit expected. A plane takes most of a minute to come up, so the suites
// that read it (the printed walkthrough, the fleet page in a browser) share one rather than start two.
import { afterAll, beforeAll, expect } from 'vitest';
import { freeOffset, type NpmStart, npmStart } from './npm-start.js';

export interface DemoPlane {
  /** The running plane (inside a test or a hook). */
  plane(): NpmStart;
  /** The `export K=V` lines it printed. */
  exports(): Record<string, string>;
}

/** Registers the plane's start and stop on the enclosing describe block. */
export function useDemoPlane(): DemoPlane {
  let plane: NpmStart | undefined;
  let exports: Record<string, string> = {};

  beforeAll(async () => {
    plane = npmStart([], {}, await freeOffset());
    await plane.waitFor((o) => o.includes('Ctrl-C stops everything'), 120_000, 'plane report');
    await plane.waitFor((o) => /demo fleet Ready: 5\/5/.test(o), 180_000, 'demo fleet Ready');
    await plane.waitFor((o) => o.includes('Fleet page:'), 10_000, 'demo instructions');
    exports = plane.exports();
  }, 330_000);

  afterAll(async () => {
    const result = await plane?.stop();
    expect(['0/null', 'null/SIGINT', '130/null']).toContain(result);
  }, 90_000);

  return {
    plane: () => {
      if (!plane) throw new Error('the demo plane is not started yet');
      return plane;
    },
    exports: () => exports,
  };
}
