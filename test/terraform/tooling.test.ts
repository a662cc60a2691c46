// The offline Terraform checks: formatting, the provider-free tables module's own tests and outputs, and
// the root module's variable validations. They need the terraform binary (not a provider); without it
// they are skipped, and terraform/validate.sh is where CI runs them anyway.
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot, tablesModuleDir, terraformDir } from './support/paths.js';
import { comparable, expectedTables, plannedTables } from './support/tables.js';
import { terraform, terraformAvailable, withInitialisedModule } from './support/terraform-cli.js';

const needsTerraform = it.skipIf(!terraformAvailable);
if (!terraformAvailable) console.warn('terraform is not on PATH: the terraform CLI checks are skipped');

describe('terraform CLI checks (offline)', () => {
  needsTerraform('terraform fmt -check -recursive finds nothing to rewrite', () => {
    for (const dir of [terraformDir, join(repoRoot, 'test/terraform')]) {
      const fmt = terraform(['fmt', '-check', '-recursive', '-diff', '-no-color', dir], repoRoot);
      expect(fmt.stdout, `unformatted HCL under ${dir}`).toBe('');
      expect(fmt.status).toBe(0);
    }
  });

  needsTerraform('the tables module passes its own terraform test', () => {
    const result = withInitialisedModule(tablesModuleDir, (dataDir) =>
      terraform(['test', '-no-color'], tablesModuleDir, dataDir),
    );
    expect(result.stdout).toMatch(/Success! \d+ passed, 0 failed/);
    expect(result.status).toBe(0);
  });

  needsTerraform('the tables module decodes exactly what the code loads from shared/topology', () => {
    expect(comparable(plannedTables())).toEqual(comparable(expectedTables()));
  });

  needsTerraform('the root variables validate as variables.tftest.hcl says', () => {
    // Variables need no provider: variables.tf alone is a module terraform can test offline.
    const scratch = mkdtempSync(join(tmpdir(), 'proxyplane-vars-'));
    try {
      mkdirSync(join(scratch, 'tests'));
      cpSync(join(terraformDir, 'variables.tf'), join(scratch, 'variables.tf'));
      const tests = join(repoRoot, 'test/terraform/variables.tftest.hcl');
      cpSync(tests, join(scratch, 'tests/variables.tftest.hcl'));
      // Every run block, counted from the file: none skipped, none failed.
      const runs = readFileSync(tests, 'utf8').match(/^run "/gm)?.length ?? 0;
      expect(runs).toBeGreaterThan(40);
      const result = withInitialisedModule(scratch, (dataDir) =>
        terraform(['test', '-no-color'], scratch, dataDir),
      );
      expect(result.stdout).toContain(`Success! ${runs} passed, 0 failed`);
      expect(result.status).toBe(0);
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  });

  needsTerraform(
    'validate.sh runs fmt and the module tests, and skips root validate only for want of a registry',
    () => {
      const run = spawnSync('bash', [join(terraformDir, 'validate.sh')], {
        cwd: repoRoot,
        encoding: 'utf8',
        timeout: 180_000,
        env: { ...process.env, TF_CLI_ARGS: '-no-color' },
      });
      const output = `${run.stdout}${run.stderr}`;
      expect(run.status, output).toBe(0);
      expect(output).toContain('terraform fmt: clean');
      expect(output).toMatch(/Success! \d+ passed, 0 failed/);
      // Either the provider was installed and the root module validated, or the skip says why.
      expect(output).toMatch(
        /terraform validate skipped: the google provider cannot be installed here \(no registry access\)|Success! The configuration is valid/,
      );
    },
  );
});
