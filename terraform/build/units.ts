// The deployable units of the repo: one per Cloud Functions function (rows of
// shared/topology/functions.json, the table terraform/functions.tf deploys) and one per Cloud Run
// service (terraform/run.tf). Each unit is a folder under functions/ with a TypeScript entry point.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export type UnitKind = 'function' | 'service';

export interface Unit {
  name: string;
  kind: UnitKind;
  /** The unit's folder, relative to the repo root (functions/<name>). */
  dir: string;
  /** The TypeScript entry point, relative to the repo root. */
  entry: string;
}

/** The Cloud Run services (run.tf); each has `src/main.ts` and becomes an image. */
export const cloudRunServices = ['api', 'gateway'] as const;

/** Where each kind is written, relative to the output root; terraform/functions.tf zips dist/functions/<name>. */
export const unitOutputDir: Record<UnitKind, string> = { function: 'functions', service: 'services' };

interface FunctionRow {
  source: string;
}

export function listUnits(root: string): Unit[] {
  const table = JSON.parse(readFileSync(join(root, 'shared/topology/functions.json'), 'utf8')) as {
    functions: Record<string, FunctionRow>;
  };
  const functions = Object.entries(table.functions).map(
    ([name, row]): Unit => ({ name, kind: 'function', dir: row.source, entry: `${row.source}/src/index.ts` }),
  );
  const services = cloudRunServices.map(
    (name): Unit => ({
      name,
      kind: 'service',
      dir: `functions/${name}`,
      entry: `functions/${name}/src/main.ts`,
    }),
  );
  return [...functions, ...services];
}
