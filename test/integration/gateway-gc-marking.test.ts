// The gateway sets V8's marking mode at run time (gc-marking.ts, GATEWAY_GC_MARKING): this checks that
// the flag really takes effect in this Node — a V8 that froze its flags after start-up would ignore it —
// on a workload that grows the old generation past where V8 starts incremental marking. Why "atomic" is
// the default is measured by bench/gateway.ts (docs/gateway.md § Performance), not here.
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const fixture = join(import.meta.dirname, '../fixtures/gc-marking/gc-kinds.mts');
const gcKinds = (mode: string): { major: number; minor: number; incremental: number } =>
  JSON.parse(execFileSync(process.execPath, ['--import', 'tsx', fixture, mode], { encoding: 'utf8' }));

describe('gateway GC marking mode', () => {
  it('"atomic" runs full GCs with no incremental marking; "incremental" marks incrementally', () => {
    const atomic = gcKinds('atomic');
    expect(atomic.major).toBeGreaterThan(0);
    expect(atomic.incremental).toBe(0);
    const incremental = gcKinds('incremental');
    expect(incremental.incremental).toBeGreaterThan(0);
  });
});
