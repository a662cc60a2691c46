// The Node versions the project says it runs on: package.json's engines.node, the README's "Node X+ or
// Y+" and docs/deploy.md's "Node.js X+ or Y+" (its step 1 runs `node --import tsx`) must name the same ones, and neither may promise a Node that cannot run it. `npm start`
// runs `node --import tsx` (its children run esbuild bundles), and tsx registers its loader only where
// module.register exists (20.6 on the 20 line: isFeatureSupported(moduleRegister) in tsx's dist); `npm
// test` runs vitest, whose vite declares its own engines. File reads only.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

type Version = [number, number];

const read = (rel: string) => readFileSync(new URL(`../../${rel}`, import.meta.url), 'utf8');
const engines = (rel: string): string => JSON.parse(read(rel)).engines.node;

/** The lowest version of each `||` alternative of a range made of `^X.Y.Z` and `>=X.Y[.Z]` terms. */
function minimums(range: string): Version[] {
  return range.split('||').map((alt) => {
    const m = /^\s*(?:\^|>=)\s*(\d+)\.(\d+)(?:\.\d+)?\s*$/.exec(alt);
    if (!m) throw new Error(`unexpected engines range "${range}"`);
    return [Number(m[1]), Number(m[2])];
  });
}

const atLeast = (a: Version, b: Version) => a[0] > b[0] || (a[0] === b[0] && a[1] >= b[1]);
const TSX_IMPORT: Version = [20, 6];

describe('the Node version', () => {
  const ours = minimums(engines('package.json'));

  it("is the README's", () => {
    const stated = /^Node (\d+)\.(\d+)\+ or (\d+)\.(\d+)\+,/m.exec(read('README.md'));
    expect(stated, 'README.md: "Node X.Y+ or A.B+, Java 17 …"').not.toBeNull();
    const [, a, b, c, d] = stated!.map(Number);
    expect(ours).toEqual([
      [a, b],
      [c, d],
    ]);
  });

  it("is docs/deploy.md's", () => {
    const stated = /Node\.js (\d+)\.(\d+)\+ or (\d+)\.(\d+)\+/.exec(read('docs/deploy.md'));
    expect(stated, 'docs/deploy.md: "Node.js X.Y+ or A.B+"').not.toBeNull();
    const [, a, b, c, d] = stated!.map(Number);
    expect(ours).toEqual([
      [a, b],
      [c, d],
    ]);
  });

  it('is no lower than what `node --import tsx` and vitest need', () => {
    const lowest = ours[0]!;
    expect(atLeast(lowest, TSX_IMPORT)).toBe(true);
    expect(atLeast(lowest, minimums(engines('node_modules/vite/package.json'))[0]!)).toBe(true);
  });
});
