// Runs the terraform CLI for the offline parts of the checks: fmt, provider-free modules' init / test /
// plan. Each call gets its own TF_DATA_DIR in a scratch directory, so nothing is written into the tree.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface TfResult {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** True when a terraform binary answers on PATH; the checks that need it are skipped otherwise. */
export const terraformAvailable: boolean =
  spawnSync('terraform', ['version'], { timeout: 30_000 }).status === 0;

export function terraform(args: string[], cwd: string, dataDir?: string): TfResult {
  const result = spawnSync('terraform', args, {
    cwd,
    encoding: 'utf8',
    timeout: 120_000,
    env: { ...process.env, TF_IN_AUTOMATION: '1', ...(dataDir ? { TF_DATA_DIR: dataDir } : {}) },
  });
  return { status: result.status, stdout: result.stdout ?? '', stderr: result.stderr ?? '' };
}

/** `terraform init` then `fn(dataDir)` in a throwaway data dir. */
export function withInitialisedModule<T>(dir: string, fn: (dataDir: string) => T): T {
  const dataDir = mkdtempSync(join(tmpdir(), 'proxyplane-tf-'));
  try {
    const init = terraform(['init', '-backend=false', '-input=false', '-no-color'], dir, dataDir);
    if (init.status !== 0) throw new Error(`terraform init failed in ${dir}:\n${init.stdout}${init.stderr}`);
    return fn(dataDir);
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** The output values `terraform plan` computes for a provider-free module, read from `show -json`. */
export function plannedOutputs(dir: string, vars: Record<string, string>): Record<string, unknown> {
  return withInitialisedModule(dir, (dataDir) => {
    const planFile = join(dataDir, 'plan.tfplan');
    const varArgs = Object.entries(vars).flatMap(([k, v]) => ['-var', `${k}=${v}`]);
    const plan = terraform(
      ['plan', '-input=false', '-no-color', `-out=${planFile}`, ...varArgs],
      dir,
      dataDir,
    );
    if (plan.status !== 0) throw new Error(`terraform plan failed in ${dir}:\n${plan.stdout}${plan.stderr}`);
    const show = terraform(['show', '-json', planFile], dir, dataDir);
    if (show.status !== 0) throw new Error(`terraform show failed:\n${show.stderr}`);
    const json = JSON.parse(show.stdout) as {
      planned_values: { outputs: Record<string, { value: unknown }> };
    };
    return Object.fromEntries(Object.entries(json.planned_values.outputs).map(([k, o]) => [k, o.value]));
  });
}
