// The one output convention of every bench (../shared/design/benchmarks.md): bench/results/<name>.json,
// the same figures printed as a short table, and a closing "bench <name>: k/n targets met" line.
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { fileURLToPath } from 'node:url';

export type Op = '>=' | '<=';
export interface Target {
  op: Op;
  value: number;
}

export interface BenchResult {
  name: string;
  params: Record<string, unknown>;
  metrics: Record<string, number | null>;
  targets: Record<string, Target>;
  /** Free-form context kept in the file (what was compared, caveats). */
  notes?: string[];
  /** When the measurement ran (a result re-summarised from an earlier run keeps that run's time). */
  at?: Date;
}

export const resultsDir = fileURLToPath(new URL('../results/', import.meta.url));

export function writeResult(r: BenchResult): string {
  const targets = Object.fromEntries(
    Object.entries(r.targets).map(([k, t]) => {
      const v = r.metrics[k];
      const met = v !== null && v !== undefined && (t.op === '>=' ? v >= t.value : v <= t.value);
      return [k, { ...t, met }];
    }),
  );
  const out = {
    name: r.name,
    at: (r.at ?? new Date()).toISOString(),
    machine: { cpus: cpus().length, node: process.version },
    params: r.params,
    metrics: r.metrics,
    targets,
    ...(r.notes ? { notes: r.notes } : {}),
  };
  mkdirSync(resultsDir, { recursive: true });
  const file = `${resultsDir}${r.name}.json`;
  writeFileSync(file, `${JSON.stringify(out, null, 2)}\n`);
  const width = Math.max(...Object.keys(r.metrics).map((k) => k.length));
  for (const [k, v] of Object.entries(r.metrics)) {
    const t = targets[k];
    const goal = t ? `  target ${t.op} ${t.value}  ${t.met ? 'met' : 'MISSED'}` : '';
    console.log(`${k.padEnd(width)}  ${v === null ? '-' : Number(v.toFixed(3))}${goal}`);
  }
  const met = Object.values(targets).filter((t) => t.met).length;
  console.log(`bench ${r.name}: ${met}/${Object.keys(targets).length} targets met`);
  return file;
}
