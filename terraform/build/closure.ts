// Which compiled files a unit needs and which npm packages it imports: a walk of the import graph of
// tsc's ESM output from the unit's entry. Only static specifiers count (import/export … from '…' and
// import('…') with a string literal), which is all this codebase uses.
import { readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';

const SPECIFIER = /(?:\bfrom\s*|\bimport\s*\(\s*|^\s*import\s+)['"]([^'"]+)['"]/gm;
const builtins = new Set(builtinModules);

export interface Closure {
  /** Compiled files reachable from the entry, relative to the compiled root. */
  files: string[];
  /** npm package names imported anywhere in those files. */
  packages: string[];
}

/** The npm package a bare specifier names ('@a/b/c' → '@a/b', 'hono/utils' → 'hono'), or null for a builtin. */
export function packageOf(specifier: string): string | null {
  if (specifier.startsWith('node:') || builtins.has(specifier.split('/')[0] ?? '')) return null;
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : (parts[0] ?? specifier);
}

export function importClosure(compiledRoot: string, entry: string): Closure {
  const files = new Set<string>();
  const packages = new Set<string>();
  const pending = [resolve(compiledRoot, entry)];
  while (pending.length > 0) {
    const file = pending.pop()!;
    const rel = relative(compiledRoot, file);
    if (files.has(rel)) continue;
    files.add(rel);
    for (const match of readFileSync(file, 'utf8').matchAll(SPECIFIER)) {
      const specifier = match[1]!;
      if (specifier.startsWith('.')) {
        pending.push(join(dirname(file), specifier));
      } else {
        const pkg = packageOf(specifier);
        if (pkg) packages.add(pkg);
      }
    }
  }
  return { files: [...files].sort(), packages: [...packages].sort() };
}
