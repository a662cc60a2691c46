// biome-ignore-all lint/suspicious/noTemplateCurlyInString: Terraform expressions parse to "${…}" strings.
// The operator controls of issue 11 against what Terraform deploys: every job the scheduler module can
// control (shared/src/adapters/scheduler) exists in the deployed schedule table under the resource name
// the module computes, the API knows the project and region those names need, and the API's service
// account may do exactly what the module does — read, run, pause, resume — and no more.
import { beforeAll, describe, expect, it } from 'vitest';
import { SCHEDULER_PERMISSIONS } from '../../shared/src/adapters/scheduler/cloud-scheduler-jobs.js';
import { controllableJobIds, jobResourceName } from '../../shared/src/adapters/scheduler/job-names.js';
import { loadScheduleTable } from '../../shared/src/config/topology.js';
import { evaluate, type Scope } from './support/expr.js';
import { type Block, loadModule, nested, resourceOf, type TfConfig } from './support/hcl.js';
import { terraformDir } from './support/paths.js';
import { type TablesOut, wiringTables } from './support/tables.js';

let tf: TfConfig;
let tables: TablesOut;
beforeAll(async () => {
  tf = await loadModule(terraformDir);
  tables = wiringTables();
});

const scope = (key: string, value: unknown): Scope => ({
  iterators: { each: { key, value } },
  locals: tf.locals,
  modules: { tables: tables as unknown as Record<string, unknown> },
});
const controlled = controllableJobIds(loadScheduleTable());

describe('the jobs the API controls are the jobs Terraform deploys', () => {
  it('the module controls at least the four periodic jobs', () => {
    expect(controlled).toEqual(
      expect.arrayContaining(['requeue-sweep', 'probe-tick', 'gc-sweep', 'snapshot-tick']),
    );
  });

  it.each(controlled)('%s is a deployed Cloud Scheduler job, named as the module names it', (id) => {
    const job = resourceOf(tf, 'google_cloud_scheduler_job', 'job');
    expect(job.for_each).toBe('${module.tables.schedules}');
    expect(Object.keys(tables.schedules), `${id} is not in the deployed schedule table`).toContain(id);
    const deployed = evaluate(job, scope(id, tables.schedules[id])) as Block;
    // Cloud Scheduler's resource name is projects/{project}/locations/{region}/jobs/{name}; with the
    // deployed name and region in it, it must be exactly what the module asks Cloud Scheduler for.
    expect(deployed.region).toEqual({ address: 'var.region', attribute: '' });
    const at = { projectId: 'PROJECT', location: 'REGION' };
    expect(`projects/PROJECT/locations/REGION/jobs/${deployed.name as string}`).toBe(jobResourceName(at, id));
  });

  it('the API runs with the project and region the module builds the names from', () => {
    const api = resourceOf(tf, 'google_cloud_run_v2_service', 'api');
    const env = (nested(api, 'template', 'containers').dynamic as { env: Block[] }).env[0]!;
    expect(env.for_each as string).toMatch(/^\$\{merge\(local\.runtime_env,/);
    expect(tf.locals.runtime_env).toMatchObject({
      GOOGLE_CLOUD_PROJECT: '${var.project_id}',
      REGION: '${var.region}',
    });
    // The same var.region the jobs are deployed in, and never a scheduler emulator.
    expect(JSON.stringify(env)).not.toContain('SCHEDULER_EMULATOR_HOST');
  });
});

describe("the API's service account may operate the jobs, and only that", () => {
  const role = () => resourceOf(tf, 'google_project_iam_custom_role', 'job_operator');

  it('holds a custom role with exactly the permissions the module uses', () => {
    expect([...(role().permissions as string[])].sort()).toEqual(
      [...new Set(Object.values(SCHEDULER_PERMISSIONS))].sort(),
    );
    for (const p of role().permissions as string[]) {
      expect(p).not.toMatch(/\.(create|update|delete)$/);
    }
  });

  it('is granted to the API at project level (Cloud Scheduler has no per-job IAM)', () => {
    const roles = tf.locals.project_roles as Record<string, string[]>;
    expect(roles.api).toContain('${local.custom_roles.job_operator}');
    const customRoles = tf.locals.custom_roles as Record<string, string>;
    expect(customRoles.job_operator).toBe(
      'projects/${var.project_id}/roles/${google_project_iam_custom_role.job_operator.role_id}',
    );
    expect(String(tf.locals.members)).toMatch(/\bapi\s+=\s+google_service_account\.api\.member\b/);
    expect(nested(resourceOf(tf, 'google_cloud_run_v2_service', 'api'), 'template').service_account).toBe(
      '${google_service_account.api.email}',
    );
  });

  it('no other component gets Cloud Scheduler rights', () => {
    const roles = tf.locals.project_roles as Record<string, unknown>;
    const holders = Object.entries(roles)
      .filter(
        ([, r]) => JSON.stringify(r).includes('job_operator') || JSON.stringify(r).includes('cloudscheduler'),
      )
      .map(([member]) => member);
    expect(holders).toEqual(['api']);
  });

  it('the Cloud Scheduler API is enabled', () => {
    expect(String(tf.locals.services)).toContain('"cloudscheduler.googleapis.com"');
  });
});
