// The order test files start in. Three workers run the integration tier, and a handful of files take a
// minute or more each (they start a whole plane, or processes such as the CLI's and the API's): started
// last, one of them alone sets the run's tail. Vitest orders by the durations it cached from the last run,
// but a fresh clone (CI) has none and falls back to file size, which says little about run time. So, when
// a file has no cached duration, the files that start processes go first: `npm start` planes, then test
// planes (the gateway's and the demo's included) and the CLI, then everything else in Vitest's own order.
// The demo's `npm start` (useDemoPlane, the longest file of all) goes with the test planes, not beside the
// other `npm start` file: two planes starting at once, on two cores, slow each other's start (which
// local-plane.test.ts bounds at 150 s).
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/** How much of a run a file is likely to take, from what it starts: 2 = `npm start`, 1 = processes, 0. */
export function startupWeight(source: string): number {
  if (/\bnpmStart\(/.test(source)) return 2;
  if (/\b(?:startTestPlane|startGatewayPlane|useDemoPlane|cliRunner)\(|bin\/proxyplane\.mjs/.test(source))
    return 1;
  return 0;
}

export class SlowFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const key = (s: TestSpecification) => `${s.project.name}:${relative(this.ctx.config.root, s.moduleId)}`;
    if (sorted.every((s) => this.ctx.cache.getFileTestResults(key(s)) !== undefined)) return sorted;
    const weight = new Map(sorted.map((s) => [s, startupWeight(readFileSync(s.moduleId, 'utf8'))]));
    const group = (s: TestSpecification) => s.project.config.sequence.groupOrder;
    // Array.prototype.sort is stable: within a project and a weight, Vitest's order stays.
    return sorted
      .map((s, i) => ({ s, i }))
      .sort((a, b) => {
        const byGroup = group(a.s) - group(b.s);
        if (byGroup !== 0 || a.s.project.name !== b.s.project.name) return byGroup || a.i - b.i;
        return weight.get(b.s)! - weight.get(a.s)! || a.i - b.i;
      })
      .map(({ s }) => s);
  }
}
