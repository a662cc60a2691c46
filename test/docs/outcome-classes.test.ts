// The gateway.traffic line counts requests by class (shared/src/domain/gateway/traffic.ts), and an operator
// reads those classes against docs/gateway.md § Error codes: every code listed there must fall in a class
// of its own kind, so that a code added to the table without a class shows here rather than as `other` in
// production. `internal` (a gateway bug, 500) is the one code left to `other`.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { outcomeClass } from '../../shared/src/domain/gateway/traffic.js';
import { repoRoot } from '../terraform/support/paths.js';

describe('the outcome classes of the gateway.traffic line', () => {
  it('classify every code docs/gateway.md § Error codes lists, except the 500 nobody can act on', () => {
    const doc = readFileSync(join(repoRoot, 'docs/gateway.md'), 'utf8');
    const table = doc.split('### Error codes')[1]!.split('\n## ')[0]!;
    const codes = [...table.matchAll(/`([a-z_]+)`/g)].map((m) => m[1]!);
    expect(codes.length).toBeGreaterThan(25);
    expect(codes.filter((c) => outcomeClass(c) === 'other')).toEqual(['internal']);
  });
});
