// Contract seed §3: "an outage of the control plane must never make the Worker query PostgreSQL or Redis
// to compensate on the hot path" — here the store is Firestore. The gateway holds no Firestore client at
// all: what it knows comes in snapshots (Pub/Sub, or GET …/snapshot from the API), and its hot path reads
// the one it holds. Checked on the import graph of its sources from the entry point (type-only imports
// included, which over-approximates what runs: safe for a "never").
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { packageOf } from '../../../terraform/build/closure.js';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const SPECIFIER = /(?:\bfrom\s*|\bimport\s*\(\s*|^\s*import\s+)['"]([^'"]+)['"]/gm;

/** Every source file reachable from `entry` and every npm package those files import. */
function sourceClosure(entry: string): { files: string[]; packages: Set<string> } {
  const files = new Set<string>();
  const packages = new Set<string>();
  const pending = [join(repoRoot, entry)];
  while (pending.length > 0) {
    const file = pending.pop()!;
    if (files.has(file)) continue;
    files.add(file);
    for (const m of readFileSync(file, 'utf8').matchAll(SPECIFIER)) {
      const spec = m[1]!;
      if (!spec.startsWith('.')) {
        const pkg = packageOf(spec);
        if (pkg) packages.add(pkg);
        continue;
      }
      const target = join(dirname(file), spec.replace(/\.js$/, '.ts'));
      // A JSON module (the topology tables) or a file of another extension is read by no walk.
      if (target.endsWith('.ts') && existsSync(target)) pending.push(target);
    }
  }
  return { files: [...files].map((f) => relative(repoRoot, f)), packages };
}

describe('the gateway worker never reads the store', () => {
  const { files, packages } = sourceClosure('functions/gateway/src/main.ts');

  it('walks the whole worker: its control session, Pub/Sub feed and data path', () => {
    expect(files).toEqual(
      expect.arrayContaining([
        'functions/gateway/src/control/pubsub-feed.ts',
        'functions/gateway/src/proxy-session.ts',
        'functions/gateway/src/fetch-through.ts',
      ]),
    );
    expect(packages).toContain('@google-cloud/pubsub');
  });

  it('imports no Firestore client and no Firestore adapter', () => {
    expect([...packages]).not.toContain('@google-cloud/firestore');
    expect(files.filter((f) => f.startsWith('shared/src/adapters/firestore/'))).toEqual([]);
  });
});
