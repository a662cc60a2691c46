// `npm run bench -- <name> [args…]` runs bench/<name>.ts; `npm run bench` runs every bench in turn.
// A bench module exports `default async function (args: string[]): Promise<void>` and writes
// bench/results/<name>.json through bench/support/result.ts (see ../shared/design/benchmarks.md).
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

type Bench = { default: (args: string[]) => Promise<void> };

const dir = fileURLToPath(new URL('.', import.meta.url));
const [name, ...args] = process.argv.slice(2);
const names = name
  ? [name]
  : readdirSync(dir)
      .filter((f) => f.endsWith('.ts') && f !== 'main.ts')
      .map((f) => f.slice(0, -3))
      .sort();

for (const n of names) {
  if (!/^[a-z0-9-]+$/.test(n)) throw new Error(`not a bench name: ${n}`);
  const mod = (await import(`./${n}.ts`)) as Bench;
  if (typeof mod.default !== 'function') throw new Error(`bench/${n}.ts has no default export`);
  console.log(`== bench ${n}`);
  await mod.default(name ? args : []);
}
