// biome-ignore-all lint/suspicious/noTemplateCurlyInString: Terraform expressions parse to "${…}" strings.
// Terraform against the code it deploys, with the code as the source of truth: every environment variable
// Terraform sets is one the unit's config loader reads, and the loader accepts what Terraform gives it
// (so a renamed variable fails here, not as a VM in the default network); the gateway's token audience is
// one the API accepts; topic grants are exactly the publishers each unit's code reaches; the alert on a
// stale gateway fires before the gateway stops, and every alert has its runbook section in docs/operations.md.
// Nothing here needs a provider or a cloud.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { SecretManagerServiceClient } from '@google-cloud/secret-manager';
import { beforeAll, describe, expect, it } from 'vitest';
import { MAX_FLEET_STREAMS } from '../../functions/api/src/fleet/routes.js';
import { DEFAULT_AUTH_FAILURE_RATE } from '../../functions/api/src/middleware/auth-failure-limit.js';
import {
  CALLER_CLASSES,
  type CallerRates,
  DEFAULT_CALLER_RATES,
  rateEnvName,
} from '../../functions/api/src/middleware/caller-rate-limit.js';
import { ConfigError, loadGatewayConfig } from '../../functions/gateway/src/config.js';
import {
  GC_LIST_BUDGET_MS,
  GC_RUN_DEADLINE_MS,
  GC_TIMEOUT_MS,
  GcJob,
} from '../../functions/gc/src/handler.js';
import { MIN_PASS_BUDGET_MS, ProbeJob } from '../../functions/probe/src/handler.js';
import { pollIntervals } from '../../functions/reconcile/src/config.js';
import { PASS_START_BUDGET_MS } from '../../functions/reconcile/src/handler.js';
import {
  marginMs,
  REQUEUE_JOB,
  type RequeueConfig,
  steadyRefreshMs,
  tickPeriodMs,
} from '../../functions/requeue/src/config.js';
import { UPKEEP_DEADLINE_MS } from '../../functions/snapshot/src/handler.js';
import { SnapshotJob } from '../../functions/snapshot/src/job-run.js';
import { SUBSCRIPTION_RETENTION_BUDGET_MS } from '../../functions/snapshot/src/subscription-retention.js';
import { CLAIM_TIMEOUT_MS, RECORD_MARGIN_MS } from '../../shared/src/adapters/bounded-job-runs.js';
import { NETWORK_TAG } from '../../shared/src/adapters/gce/labels.js';
import { defaultRetry } from '../../shared/src/adapters/gce/retry.js';
import { SUBSCRIPTION_DELETE_TIMEOUT_MS } from '../../shared/src/adapters/pubsub/subscription-reaper.js';
import { loadFunctionTable, loadPubSubTable, loadScheduleTable } from '../../shared/src/config/topology.js';
import { ManagedSpec } from '../../shared/src/domain/proxy.js';
import { DEFAULT_WORKER_SETTINGS, WorkerSettingsEnv } from '../../shared/src/domain/workers/settings.js';
import { listUnits, type Unit } from '../../terraform/build/units.js';
import { type Block, loadModule, nested, resourceOf, type TfConfig } from './support/hcl.js';
import { repoRoot, terraformDir } from './support/paths.js';
import {
  deployedEnv,
  type Loaded,
  loadUnitConfig,
  SAMPLE_PROJECT,
  SECRET_SAMPLES,
  TerraformValues,
  terraformEnv,
  type UnitEnv,
} from './support/unit-env.js';

let tf: TfConfig;
let values: TerraformValues;
const units = listUnits(repoRoot);
const deployed = new Map<string, { env: UnitEnv; loaded: Loaded }>();

beforeAll(async () => {
  tf = await loadModule(terraformDir);
  values = new TerraformValues(tf);
  for (const unit of units) {
    const env = terraformEnv(tf, values, unit);
    deployed.set(unit.name, { env, loaded: await loadUnitConfig(unit, deployedEnv(unit, env)) });
  }
});

const unitOf = (name: string) => deployed.get(name)!;
const configOf = <T>(name: string) => unitOf(name).loaded.config as T;
const cases = units.map((u) => [u.name, u] as [string, Unit]);

describe('every function and Cloud Run service: the env Terraform sets is the env the code reads', () => {
  it.each(cases)('%s starts with it (variable defaults plus the required ones)', (name) => {
    const { loaded } = unitOf(name);
    expect(loaded.error, String(loaded.error)).toBeUndefined();
    expect(loaded.config).toBeDefined();
  });

  it.each(cases)('%s reads every key Terraform sets on it', (name) => {
    const { env, loaded } = unitOf(name);
    const set = [...Object.keys(env.plain), ...Object.keys(env.secrets)];
    expect(set.length).toBeGreaterThan(0);
    expect(set.filter((k) => !loaded.read.has(k))).toEqual([]);
  });

  it('every function_env entry names a function (lookup() would drop a misnamed one without a word)', () => {
    const fnEnv = tf.locals.function_env as Record<string, unknown>;
    const functions = Object.keys(loadFunctionTable().functions);
    expect(Object.keys(fnEnv).length).toBeGreaterThan(0);
    expect(Object.keys(fnEnv).filter((k) => !functions.includes(k))).toEqual([]);
  });

  it("requeue does not read reconcile's VM settings: Terraform could not set them on it unnoticed", async () => {
    const requeue = units.find((u) => u.name === 'requeue')!;
    const { env } = unitOf('requeue');
    const extra = { ...env.plain, GCE_NETWORK: 'n', GCE_SERVICE_ACCOUNT: 'a@b.c', RECONCILE_MAX_PASSES: '3' };
    const loaded = await loadUnitConfig(requeue, deployedEnv(requeue, { plain: extra, secrets: {} }));
    for (const k of ['GCE_NETWORK', 'GCE_SERVICE_ACCOUNT', 'RECONCILE_MAX_PASSES'])
      expect(loaded.read.has(k)).toBe(false);
    expect(loaded.read.has('RECONCILE_DRIFT_POLL_MS')).toBe(true);
  });

  it('the recording sees a misnamed key: the loader reads the right name, never the wrong one', async () => {
    const reconcile = units.find((u) => u.name === 'reconcile')!;
    const { env } = unitOf('reconcile');
    const { GCE_NETWORK, GCE_SERVICE_ACCOUNT, ...rest } = env.plain;
    const misnamed = { ...rest, PROXY_NETWORK: GCE_NETWORK!, PROXY_SERVICE_ACCOUNT: GCE_SERVICE_ACCOUNT! };
    const loaded = await loadUnitConfig(reconcile, deployedEnv(reconcile, { plain: misnamed, secrets: {} }));
    expect(loaded.read.has('PROXY_NETWORK')).toBe(false);
    expect(loaded.read.has('GCE_NETWORK')).toBe(true);
    expect(String(loaded.error)).toMatch(/GCE_NETWORK and GCE_SERVICE_ACCOUNT must be set on GCP/);
  });
});

describe('proxy VMs: the network, account, tag and port reconcile uses are the ones Terraform opens', () => {
  it('reconcile inserts VMs into the plane network with the proxy VM account', () => {
    const config = configOf<{ GCE_NETWORK: string; GCE_SERVICE_ACCOUNT: string }>('reconcile');
    expect(config.GCE_NETWORK).toBe(
      `https://www.googleapis.com/compute/v1/projects/${SAMPLE_PROJECT}/global/networks/plane`,
    );
    expect(config.GCE_SERVICE_ACCOUNT).toBe(`pp-proxy-vm@${SAMPLE_PROJECT}.iam.gserviceaccount.com`);
    const fn = tf.locals.function_env as Record<string, Record<string, string>>;
    expect(fn.reconcile).toMatchObject({
      GCE_NETWORK: '${google_compute_network.plane.self_link}',
      GCE_SERVICE_ACCOUNT: '${google_service_account.proxy_vm.email}',
    });
  });

  it("the firewall's tag is the one the code puts on every instance, its port a spec's default port", () => {
    const fw = resourceOf(tf, 'google_compute_firewall', 'proxy_port');
    expect(fw.target_tags).toEqual(['${local.proxy_network_tag}']);
    expect(values.local('proxy_network_tag')).toBe(NETWORK_TAG);
    expect(fw.allow).toEqual([{ protocol: 'tcp', ports: ['${tostring(var.proxy_port)}'] }]);
    expect(values.variable('proxy_port')).toBe(ManagedSpec.shape.port.parse(undefined));
  });

  it("the API's rate limits: Terraform's defaults are the code's, one variable per route class", () => {
    const env = tf.locals.api_env as Record<string, string>;
    for (const cls of CALLER_CLASSES) {
      expect(env[rateEnvName(cls)]).toBe(`\${var.api_rate_limits.${cls.replace('-', '_')}}`);
    }
    expect(env.RATE_LIMIT_AUTH_FAILURE).toBe('${var.api_rate_limits.auth_failure}');
    const api = configOf<{ callerRates: CallerRates; authFailureRate: unknown }>('api');
    expect(api.callerRates).toEqual(DEFAULT_CALLER_RATES);
    expect(api.authFailureRate).toEqual(DEFAULT_AUTH_FAILURE_RATE);
  });

  it('the API accepts managed proxies on exactly the port the firewall opens, and no other', () => {
    expect((tf.locals.api_env as Record<string, string>).MANAGED_PROXY_PORTS).toBe(
      '${tostring(var.proxy_port)}',
    );
    const api = configOf<{ managedProxyPorts: number[] | null }>('api');
    expect(api.managedProxyPorts).toEqual([values.variable('proxy_port')]);
  });
});

describe("the gateway's identity token is for an audience the API accepts", () => {
  interface ApiConfig {
    workers: { audiences: string[]; serviceAccounts: { email: string }[] };
    auth: { google: { audiences: string[] } | null };
  }

  it('CONTROL_PLANE_URL (the audience the gateway mints for) is one of the worker audiences', () => {
    const gateway = configOf<{ CONTROL_PLANE_URL: string }>('gateway');
    const api = configOf<ApiConfig>('api');
    expect(api.workers.audiences).toContain(gateway.CONTROL_PLANE_URL);
    expect(api.workers.serviceAccounts.map((s) => s.email)).toEqual([
      `pp-gateway@${SAMPLE_PROJECT}.iam.gserviceaccount.com`,
    ]);
  });

  it("it is the API's deterministic URL, never the service's hashed uri, and so is the api_url output", () => {
    const url = configOf<{ CONTROL_PLANE_URL: string }>('gateway').CONTROL_PLANE_URL;
    expect(url).toMatch(/^https:\/\/proxyplane-api-\d+\.[a-z0-9-]+\.run\.app$/);
    expect(url).not.toBe(values.value('${google_cloud_run_v2_service.api.uri}'));
    expect(values.value(tf.output.api_url!.value)).toBe(url);
    // Admins calling $API with a service account's token use the same audience.
    expect(configOf<ApiConfig>('api').auth.google?.audiences).toContain(url);
  });

  it('the gateway starts only after the API it registers with exists', () => {
    const gateway = resourceOf(tf, 'google_cloud_run_v2_service', 'gateway');
    expect(gateway.depends_on).toContain('${google_cloud_run_v2_service.api}');
  });

  it("the API's fleet streams leave most of its request slots to leases and worker reports", () => {
    // A stream holds a Cloud Run request slot while it is open: a cap at or above the slots never refuses.
    const slots = nested(
      resourceOf(tf, 'google_cloud_run_v2_service', 'api'),
      'template',
    ).max_instance_request_concurrency;
    expect(MAX_FLEET_STREAMS).toBeLessThanOrEqual(Number(slots) / 4);
    expect(readFileSync(join(repoRoot, 'docs/cli.md'), 'utf8').replace(/\s+/g, ' ')).toContain(
      `at most ${MAX_FLEET_STREAMS} streams per API instance (a quarter of its ${slots} Cloud Run request slots`,
    );
  });

  it("the gateway's startup probe outlasts its wait for a first snapshot, which a first apply never sends in time", () => {
    // $PORT (and /healthz) opens only after GATEWAY_START_WAIT_SECONDS: a probe that gives up first has
    // Cloud Run kill every new revision that starts without a snapshot, and the apply fails.
    const wait = configOf<{ GATEWAY_START_WAIT_SECONDS: number }>('gateway').GATEWAY_START_WAIT_SECONDS;
    const probe = nested(
      resourceOf(tf, 'google_cloud_run_v2_service', 'gateway'),
      'template',
      'containers',
      'startup_probe',
    );
    expect(nested(probe, 'http_get').path).toBe('/healthz');
    const budget =
      Number(probe.initial_delay_seconds ?? 0) +
      Number(probe.period_seconds) * Number(probe.failure_threshold);
    expect(budget).toBeGreaterThanOrEqual(wait + 60);
    // Cloud Run's limit for a startup probe.
    expect(budget).toBeLessThanOrEqual(240);
    // Nor can an operator's longer wait outlast it: the longest the gateway takes leaves the process
    // start and its registration 30 s (past the probe, with no snapshot coming, Cloud Run restarted it
    // again and again, a new worker each time).
    const users = { GATEWAY_CLIENT_USERS: 'u:p' };
    const longest = loadGatewayConfig([], { ...users, GATEWAY_START_WAIT_SECONDS: '90' });
    expect(budget).toBeGreaterThanOrEqual(longest.GATEWAY_START_WAIT_SECONDS + 30);
    expect(() => loadGatewayConfig([], { ...users, GATEWAY_START_WAIT_SECONDS: '91' })).toThrow(ConfigError);
  });
});

describe('gateway client credentials', () => {
  it('are wired from the gateway-clients secret unconditionally, and the default secrets hold one', () => {
    expect(unitOf('gateway').env.secrets).toEqual({ GATEWAY_CLIENT_USERS: 'gateway-clients' });
    const secrets = values.variable('secrets') as Record<string, { kind: string }>;
    expect(Object.values(secrets).filter((s) => s.kind === 'gateway-clients')).toHaveLength(1);
    expect(JSON.stringify(tf.variable.secrets!.validation)).toContain(
      'length([for s in var.secrets : s if s.kind == \\"gateway-clients\\"]) == 1',
    );
  });

  it('without them the gateway would not start (what the validation prevents)', async () => {
    const gatewayUnit = units.find((u) => u.name === 'gateway')!;
    const { env } = unitOf('gateway');
    const loaded = await loadUnitConfig(gatewayUnit, deployedEnv(gatewayUnit, { ...env, secrets: {} }));
    expect(String(loaded.error)).toMatch(/no client credentials/);
  });
});

describe('drift poll', () => {
  it('reconcile and requeue run with drift_poll_seconds, the D that docs/cost.md prices', () => {
    const seconds = values.variable('drift_poll_seconds') as number;
    for (const unit of ['reconcile', 'requeue']) {
      expect(configOf<{ RECONCILE_DRIFT_POLL_MS: number }>(unit).RECONCILE_DRIFT_POLL_MS).toBe(
        seconds * 1000,
      );
    }
    const cost = readFileSync(join(repoRoot, 'docs/cost.md'), 'utf8');
    const priced = [...cost.matchAll(/`D` = (\d+) min/g)].map((m) => Number(m[1]));
    expect(priced.length).toBeGreaterThan(0);
    for (const minutes of priced) expect(minutes * 60).toBe(seconds);
  });
});

describe('probe loop', () => {
  // A pass that starts at the loop's end is given at least MIN_PASS_BUDGET_MS: past the run budget, its
  // writes could run into the function's timeout, the tick redelivered and its slots probed twice.
  it("the longest loop the variable allows ends its last pass within the probe's run budget and timeout", () => {
    const condition = JSON.stringify(tf.variable.probe_loop_seconds!.validation);
    const most = /var\.probe_loop_seconds <= (\d+)/.exec(condition)?.[1];
    if (!most) throw new Error(`no upper bound in ${condition}`);
    const budget = configOf<{ PROBE_RUN_BUDGET_SECONDS: number }>('probe').PROBE_RUN_BUDGET_SECONDS;
    expect(Number(most) * 1000 + MIN_PASS_BUDGET_MS).toBeLessThanOrEqual(budget * 1000);
    expect(budget + 10).toBeLessThanOrEqual(loadFunctionTable().functions.probe!.timeoutSeconds);
  });
});

describe('replacement cap', () => {
  it('reconcile runs with reconcile_max_replacing as RECONCILE_MAX_REPLACING', () => {
    const cap = values.variable('reconcile_max_replacing') as number;
    expect(cap).toBe(5);
    expect(configOf<{ RECONCILE_MAX_REPLACING: number }>('reconcile').RECONCILE_MAX_REPLACING).toBe(cap);
  });
});

describe('requeue: the loop docs/cost.md prices is the one the deployed config runs', () => {
  it('its window, listDue polls a tick, steady-fleet listing period and memory', () => {
    const config = configOf<RequeueConfig>('requeue');
    const period = tickPeriodMs(config);
    const windowMs = period - marginMs(config, period);
    const seconds = windowMs / 1000;
    const polls = Math.ceil(windowMs / Math.min(config.REQUEUE_POLL_MS, period));
    const refresh = steadyRefreshMs(period, pollIntervals(config).DriftPoll);
    // The refresh is checked once per sweep, so the fleet is listed on the first tick that far apart.
    const listEvery = Math.ceil(refresh / period);
    const memory = /^(\d+)Mi$/.exec(loadFunctionTable().functions.requeue!.memory)?.[1];
    expect([period, seconds, polls, listEvery]).toEqual([60_000, 59, 59, 3]);
    const cost = readFileSync(join(repoRoot, 'docs/cost.md'), 'utf8');
    expect(cost).toContain(`requeue \`T · ${seconds} s\` at ${memory} MiB`);
    expect(cost).toContain(`| ${seconds} s at ${memory} MiB `);
    expect(cost).toContain(`\`${polls}·T\` (requeue: \`listDue\` polls)`);
    expect(cost).toContain(`| ${polls} reads a tick`);
    expect(cost).toContain(`\`N·T/${listEvery}\` (requeue: the steady fleet`);
    expect(cost).toContain(`\`N/${listEvery}\` = ${Math.round(1000 / listEvery)} reads`);
  });
});

// Seconds between runs of a cron schedule ("* * * * *" or "*/N * * * *", the forms the table uses).
const periodSeconds = (cron: string) => {
  const minute = cron.split(' ')[0]!;
  if (minute === '*') return 60;
  const every = /^\*\/(\d+)$/.exec(minute)?.[1];
  if (!every) throw new Error(`schedule ${cron}: not a form this test reads`);
  return Number(every) * 60;
};

describe('the worker timings are checked against the deployed snapshot tick', () => {
  it("SNAPSHOT_TICK_SECONDS' default is snapshot-tick's period, and Terraform leaves it to the code", () => {
    // settings.ts refuses grant and renewal timings that leave healthy workers stale or past usableUntil
    // at this tick: a schedule changed without it would check them against a tick that never runs.
    const schedule = loadScheduleTable().jobs['snapshot-tick']!.schedule;
    expect(WorkerSettingsEnv.parse({}).SNAPSHOT_TICK_SECONDS).toBe(periodSeconds(schedule));
    for (const [name, { env }] of deployed) {
      expect(Object.keys(env.plain), name).not.toContain('SNAPSHOT_TICK_SECONDS');
      expect(Object.keys(env.secrets), name).not.toContain('SNAPSHOT_TICK_SECONDS');
    }
  });
});

describe('the stale-gateway alert fires before the gateway stops taking traffic', () => {
  const policy = () => resourceOf(tf, 'google_monitoring_alert_policy', 'stale_gateway');
  /** The thresholds the variable's validation allows (`contains([…], var.max_snapshot_age_seconds)`). */
  const allowed = () => {
    const condition = JSON.stringify(tf.variable.max_snapshot_age_seconds!.validation);
    const list = /contains\(\[([\d,\s]+)\], var\.max_snapshot_age_seconds\)/.exec(condition);
    if (!list) throw new Error(`no allowed list in ${condition}`);
    return list[1]!.split(',').map(Number);
  };
  const bounds = () => ({ lower: Math.min(...allowed()), upper: Math.max(...allowed()) });
  const bucketBounds = () =>
    nested(
      resourceOf(tf, 'google_logging_metric', 'worker_snapshot_age'),
      'bucket_options',
      'explicit_buckets',
    ).bounds as number[];

  it('every allowed threshold is a bucket bound of the age metric, so the percentile crosses it exactly', () => {
    // Inside a bucket the percentile is interpolated toward the bucket's upper bound: with the threshold on
    // a bound, ages below it read below it and ages at or above it read above it.
    for (const t of allowed()) expect(bucketBounds()).toContain(t);
    // The age of a healthy worker (about 60 s) falls in a bucket that ends at or below every threshold.
    expect(bucketBounds().some((b) => b >= 60 && b <= bounds().lower)).toBe(true);
  });

  it('its highest allowed threshold, one report period and its duration stay under maxStaleAge', () => {
    const threshold = nested(policy(), 'conditions', 'condition_threshold');
    expect(threshold.threshold_value).toBe('${var.max_snapshot_age_seconds}');
    const duration = Number(/^(\d+)s$/.exec(String(threshold.duration))?.[1]);
    // Terraform sets neither timing: the code's defaults are the deployed values.
    for (const { env } of deployed.values()) {
      expect(Object.keys(env.plain)).not.toContain('WORKER_MAX_STALE_AGE_SECONDS');
      expect(Object.keys(env.plain)).not.toContain('GATEWAY_SNAPSHOT_AGE_LOG_SECONDS');
    }
    const reportPeriod = configOf<{ GATEWAY_SNAPSHOT_AGE_LOG_SECONDS: number }>(
      'gateway',
    ).GATEWAY_SNAPSHOT_AGE_LOG_SECONDS;
    const { upper } = bounds();
    // Leave at least one report period for log ingestion and evaluation.
    expect(upper + reportPeriod + duration + reportPeriod).toBeLessThanOrEqual(
      DEFAULT_WORKER_SETTINGS.maxStaleAgeSeconds,
    );
    expect(values.variable('max_snapshot_age_seconds') as number).toBeLessThanOrEqual(upper);
  });

  it('and its lowest allowed threshold is above the age a healthy worker reaches between snapshot ticks', () => {
    // snapshot-tick renews every worker's snapshot once a minute (cost.md: its heartbeat).
    expect(loadScheduleTable().jobs['snapshot-tick']?.schedule).toBe('* * * * *');
    expect(bounds().lower).toBeGreaterThan(60);
    expect(allowed()).toContain(values.variable('max_snapshot_age_seconds') as number);
  });
});

describe('the failing-jobs alert can fire for every scheduled job', () => {
  /** Whether a condition's filter counts this job's lines (its `metric.label.job` clauses). */
  const selects = (filter: string, job: string) =>
    [...filter.matchAll(/metric\.label\.job\s*(!?=)\s*"([^"]+)"/g)].every(([, op, value]) =>
      op === '=' ? value === job : value !== job,
    );

  it("a job failing every run logs more failed runs in some condition's window than its threshold", () => {
    const policy = resourceOf(tf, 'google_monitoring_alert_policy', 'failing_jobs');
    const threshold = values.variable('tick_failures_alert_threshold') as number;
    const conditions = ((policy.conditions ?? []) as Block[]).map((c) => {
      const body = (c.condition_threshold as Block[])[0]!;
      expect(body.threshold_value).toBe('${var.tick_failures_alert_threshold}');
      const window = Number(
        /^(\d+)s$/.exec(String((body.aggregations as Block[])[0]!.alignment_period))?.[1],
      );
      return { filter: String(body.filter), window };
    });
    const jobs = Object.entries(loadScheduleTable().jobs);
    expect(jobs.map(([job]) => job).sort()).toEqual([
      'gc-sweep',
      'probe-tick',
      'requeue-sweep',
      'snapshot-tick',
    ]);
    for (const [job, { schedule }] of jobs) {
      // At least one line per failed run (a redelivered probe or gc attempt may add more): the runs a window
      // holds, whole, must exceed the threshold.
      const runs = Math.max(
        0,
        ...conditions
          .filter((c) => selects(c.filter, job))
          .map((c) => Math.floor(c.window / periodSeconds(schedule))),
      );
      expect(runs, `${job} (${schedule}): runs in the longest window watching it`).toBeGreaterThan(threshold);
    }
  });

  it("a job whose ticks stop pages, per job, after at least three of its periods without one (duration and the last point's alignment), and within an hour", () => {
    const policy = resourceOf(tf, 'google_monitoring_alert_policy', 'stopped_jobs');
    const conditions = ((policy.conditions ?? []) as Block[]).map((c) => {
      const body = (c.condition_absent as Block[])[0]!;
      const aggregation = (body.aggregations as Block[])[0]!;
      // Per job: a job that ticked and went quiet is a series of its own that goes absent.
      expect(aggregation.group_by_fields).toEqual(['metric.label.job']);
      expect(String(body.filter)).toContain('${google_logging_metric.counter["ticks"].name}');
      const seconds = (v: unknown) => Number(/^(\d+)s$/.exec(String(v))?.[1]);
      // Absent from the last aligned point on, and that point covers the alignment period before it.
      return {
        filter: String(body.filter),
        duration: seconds(body.duration) + seconds(aggregation.alignment_period),
      };
    });
    for (const [job, { schedule }] of Object.entries(loadScheduleTable().jobs)) {
      const watching = conditions.filter((c) => selects(c.filter, job));
      expect(watching, `${job}: one absence condition watches it`).toHaveLength(1);
      const { duration } = watching[0]!;
      // A tick late or lost now and then (Scheduler's jitter, a redelivery) never pages.
      expect(duration, job).toBeGreaterThanOrEqual(3 * periodSeconds(schedule));
      expect(duration, job).toBeLessThanOrEqual(3600);
    }
  });
});

describe('every scheduled job logs the ticks its absence condition watches', () => {
  it("each job's function calls logTickReceived with that job's name (no series: its condition never fires)", () => {
    const takers: Record<string, [string, string]> = {
      [ProbeJob]: ['functions/probe/src/event.ts', 'ProbeJob'],
      [GcJob]: ['functions/gc/src/handler.ts', 'GcJob'],
      [REQUEUE_JOB]: ['functions/requeue/src/event.ts', 'REQUEUE_JOB'],
      [SnapshotJob]: ['functions/snapshot/src/handler.ts', 'SnapshotJob'],
    };
    expect(Object.keys(takers).sort()).toEqual(Object.keys(loadScheduleTable().jobs).sort());
    for (const [job, [file, constant]] of Object.entries(takers)) {
      const source = readFileSync(join(repoRoot, file), 'utf8');
      expect(source, `${file} logs ${job}'s ticks`).toMatch(
        new RegExp(`logTickReceived\\([\\w.]+, ${constant}\\)`),
      );
    }
  });
});

describe('a "for N minutes" alert on log lines pages only once they have gone on that long', () => {
  it('its duration is N minutes past its alignment period (a trailing sum stays above 0 that long after the last line)', () => {
    let checked = 0;
    for (const [name, policy] of Object.entries(tf.resource.google_monitoring_alert_policy ?? {}))
      for (const c of (policy.conditions ?? []) as Block[]) {
        const body = (c.condition_threshold as Block[] | undefined)?.[0];
        const minutes = /for (\d+) minutes$/.exec(String(c.display_name))?.[1];
        // One that says how long a gap it allows ("no gap over 5 minutes") is read by that rule instead.
        if (
          !body ||
          minutes === undefined ||
          body.threshold_value !== 0 ||
          /gap/.test(String(c.display_name))
        )
          continue;
        const seconds = (v: unknown) => Number(/^(\d+)s$/.exec(String(v))?.[1]);
        const alignment = seconds((body.aggregations as Block[])[0]!.alignment_period);
        expect(seconds(body.duration) - alignment, `${name}: ${c.display_name}`).toBeGreaterThanOrEqual(
          Number(minutes) * 60,
        );
        checked++;
      }
    expect(checked).toBeGreaterThanOrEqual(2);
  });
});

describe('an alert on lines that stopped coming pages when its name says', () => {
  it('a "for N minutes" absence condition (dynamic ones included) has duration + alignment period = N minutes (absent from the last aligned point on, which covers the period before it)', () => {
    let checked = 0;
    for (const [name, policy] of Object.entries(tf.resource.google_monitoring_alert_policy ?? {})) {
      // hcl2json: a block is a one-element array, a labelled block (dynamic "conditions") an object.
      const all = (v: unknown): Block[] => (Array.isArray(v) ? v : v ? [v as Block] : []);
      const dynamic = all(policy.dynamic)
        .flatMap((d) => all(d.conditions))
        .flatMap((c) => all(c.content));
      for (const c of [...((policy.conditions ?? []) as Block[]), ...dynamic]) {
        const body = (c.condition_absent as Block[] | undefined)?.[0];
        const minutes = /for (\d+) minutes$/.exec(String(c.display_name))?.[1];
        if (!body || minutes === undefined) continue;
        const seconds = (v: unknown) => Number(/^(\d+)s$/.exec(String(v))?.[1]);
        const alignment = seconds((body.aggregations as Block[])[0]!.alignment_period);
        expect(seconds(body.duration) + alignment, `${name}: ${c.display_name}`).toBe(Number(minutes) * 60);
        checked++;
      }
    }
    // stopped_jobs' two, stale_gateway's merged one and its CONNECT VMs' one.
    expect(checked).toBe(4);
  });
});

describe('the gateway traffic alerts read windows the gateway.traffic lines fill', () => {
  const ratioConditions = () =>
    Object.entries(tf.resource.google_monitoring_alert_policy ?? {}).flatMap(([name, policy]) =>
      ((policy.conditions ?? []) as Block[])
        .map((c) => (c.condition_threshold as Block[] | undefined)?.[0])
        .filter((b): b is Block => b?.denominator_filter !== undefined)
        .map((b) => ({ name, body: b })),
    );
  const seconds = (d: unknown) => Number(/^(\d+)s$/.exec(String(d))?.[1]);

  it('each window holds several lines of every worker, at the cadence the deployed gateway logs', () => {
    for (const { env } of deployed.values())
      expect(Object.keys(env.plain)).not.toContain('GATEWAY_TRAFFIC_LOG_SECONDS');
    const period = configOf<{ GATEWAY_TRAFFIC_LOG_SECONDS: number }>('gateway').GATEWAY_TRAFFIC_LOG_SECONDS;
    expect(ratioConditions()).toHaveLength(3);
    for (const { name, body } of ratioConditions()) {
      const window = seconds((body.aggregations as Block[])[0]!.alignment_period);
      expect(window / period, name).toBeGreaterThanOrEqual(5);
      // Longer than the window: a lone request (a share of 100 % in its windows) leaves the window
      // before the condition has held long enough to page.
      expect(seconds(body.duration), name).toBeGreaterThan(window);
      expect(String(body.threshold_value), name).toMatch(/^\$\{var\.gateway_\w+_alert_percent \/ 100\}$/);
    }
    // docs/cost.md prices the line at that cadence.
    const cost = readFileSync(join(repoRoot, 'docs/cost.md'), 'utf8');
    expect(cost).toContain(`\`gateway.traffic\` line every ${period} s`);
  });
});

describe('every log line an alert counts survives every log_level Terraform allows', () => {
  const LEVELS = ['debug', 'info', 'warn', 'error'];

  /** The level each counted event is logged at, from the `log.<level>('…', { event: '…'` calls. */
  function levelsOf(event: string): string[] {
    const call = new RegExp(
      `\\.(debug|info|warn|error)\\(\\s*(?:'[^']*'|\`[^\`]*\`)\\s*,\\s*\\{[^}]*?\\bevent: '${event.replace('.', '\\.')}'`,
      'g',
    );
    return ['functions', 'shared/src']
      .flatMap((dir) =>
        readdirSync(join(repoRoot, dir), { recursive: true, encoding: 'utf8' })
          .filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts') && !f.includes('node_modules'))
          .map((f) => readFileSync(join(repoRoot, dir, f), 'utf8')),
      )
      .flatMap((text) => [...text.matchAll(call)].map((m) => m[1]!));
  }

  it('the lowest level an event is logged at is at or below the highest log_level allowed', () => {
    const condition = JSON.stringify(tf.variable.log_level!.validation);
    const list = /contains\(\[([^\]]*)\], var\.log_level\)/.exec(condition.replaceAll('\\"', '"'));
    const allowed = [...(list?.[1] ?? '').matchAll(/"(\w+)"/g)].map((m) => m[1]!);
    expect(allowed).toContain(values.variable('log_level'));
    const highest = Math.max(...allowed.map((l) => LEVELS.indexOf(l)));
    const counters = tf.locals.log_counters as Record<string, { event: string }>;
    const events = [
      ...Object.values(counters).map((c) => c.event),
      'gateway.snapshot_age',
      'gateway.traffic',
    ];
    expect(String(resourceOf(tf, 'google_logging_metric', 'worker_snapshot_age').filter)).toContain(
      'gateway.snapshot_age',
    );
    expect(String(resourceOf(tf, 'google_logging_metric', 'gateway_traffic').filter)).toContain(
      'gateway.traffic',
    );
    for (const event of events) {
      const levels = levelsOf(event);
      expect(levels.length, `no log call emits ${event}`).toBeGreaterThan(0);
      // A line logged below the configured level is dropped: the alert would never (or always) fire.
      for (const level of levels)
        expect(LEVELS.indexOf(level), `${event} at ${level}`).toBeGreaterThanOrEqual(highest);
    }
  });
});

describe('every alert policy has its runbook in docs/operations.md', () => {
  it('its documentation names a section there, and the What-to-watch table lists it with its log metric', () => {
    const ops = readFileSync(join(repoRoot, 'docs/operations.md'), 'utf8');
    const watch = ops.split('## What to watch')[1]!.split('\n\n')[1]!;
    const counters = tf.locals.log_counters as Record<string, { event: string }>;
    const policies = Object.entries(tf.resource.google_monitoring_alert_policy ?? {});
    let logBased = 0;
    for (const [name, policy] of policies) {
      const content = String(nested(policy, 'documentation').content);
      const section = /\$\{local\.runbook\}, "([^"]+)"\.$/.exec(content)?.[1];
      expect(section, `${name}: no runbook section named`).toBeDefined();
      expect(ops, name).toContain(`\n### ${section}\n`);
      const anchor = section!.toLowerCase().replaceAll(' ', '-');
      const row = watch.split('\n').find((line) => line.startsWith(`| ${policy.display_name} `));
      expect(row, `${name}: no row for "${policy.display_name}"`).toBeDefined();
      expect(row).toContain(`(#${anchor})`);
      // A log-based alert's row names the metric and the event it counts.
      // Its first condition's (a threshold's, or an absence's: stopped_jobs has only those).
      const first = ((policy.conditions ?? []) as Block[])[0] ?? {};
      const body = ((first.condition_threshold ?? first.condition_absent ?? []) as Block[])[0];
      const filter = String(body?.filter ?? '');
      const counted = /google_logging_metric\.counter\["(\w+)"\]/.exec(filter)?.[1];
      if (!counted) continue;
      expect(row).toContain(`\`proxyplane/${counted}\` (\`event=${counters[counted]!.event}\`)`);
      logBased++;
    }
    expect(logBased).toBeGreaterThan(0);
  });
});

describe('proxy.failed: the alert groups by the failure reason the code logs', () => {
  it('labels on failureReason, a field of the proxy.failed line, not the request reason', () => {
    const counters = tf.locals.log_counters as Record<string, { labels: Record<string, string> }>;
    expect(counters.proxies_failed!.labels).toEqual({ reason: 'jsonPayload.failureReason' });
    const handler = readFileSync(join(repoRoot, 'functions/reconcile/src/handler.ts'), 'utf8');
    const line = /\{\s*event: 'proxy\.failed',([^}]*)\}/.exec(handler)?.[1] ?? '';
    expect(line).toMatch(/\bfailureReason: condition\?\.reason\b/);
  });
});

/** Every TypeScript source file reachable from the unit's entry through relative imports. */
function sourceClosure(entry: string): string[] {
  const files = new Set<string>();
  const pending = [join(repoRoot, entry)];
  while (pending.length > 0) {
    const file = pending.pop()!;
    if (files.has(file)) continue;
    files.add(file);
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|^\s*import\s+)'(\.[^']+)'/gm)) {
      const ts = join(dirname(file), m[1]!.replace(/\.js$/, '.ts'));
      if (existsSync(ts)) pending.push(ts);
    }
  }
  return [...files];
}

describe('topic publish grants are exactly the publishers the code reaches', () => {
  const topics = Object.keys(loadPubSubTable().topics);

  /** Topics named (as a literal or an exported constant) by a file that publishes. */
  function publishedTopics(unit: Unit): string[] {
    const files = sourceClosure(unit.entry).map((f) => ({ f, text: readFileSync(f, 'utf8') }));
    const constants = new Map<string, string>();
    for (const { text } of files) {
      for (const m of text.matchAll(/export const (\w+) = '([^']+)'/g))
        if (topics.includes(m[2]!)) constants.set(m[1]!, m[2]!);
    }
    const out = new Set<string>();
    for (const { text } of files.filter(({ text }) => /\.publish(Message)?\(/.test(text))) {
      for (const topic of topics) if (text.includes(`'${topic}'`)) out.add(topic);
      for (const [name, topic] of constants) if (new RegExp(`\\b${name}\\b`).test(text)) out.add(topic);
    }
    return [...out].sort();
  }

  it('every grant is used, and every publisher has its grant', () => {
    const member = (u: Unit) => (u.kind === 'function' ? `fn-${u.name}` : u.name);
    const fromCode = units.flatMap((u) => publishedTopics(u).map((t) => `${t} ${member(u)}`)).sort();
    const granted = Object.entries(tf.locals.topic_publishers as Record<string, string[]>)
      .flatMap(([topic, members]) => members.map((m) => `${topic} ${m}`))
      .sort();
    expect(granted).toEqual(fromCode);
    // The reading above must see something: the fan-out to reconcile is everywhere.
    expect(fromCode).toContain('reconcile-requests fn-probe');
  });
});

describe('the subscription roles hold exactly the subscription calls their holders make', () => {
  /**
   * The permission each subscription-admin call of @google-cloud/pubsub checks
   * (https://cloud.google.com/pubsub/docs/access-control#required_permissions). Pulling and acking
   * (subscription.on('message'), ack, nack, close) is pubsub.subscriptions.consume: roles/pubsub.subscriber.
   */
  const SUBSCRIPTION_CALL: Record<string, string> = {
    createSubscription: 'pubsub.subscriptions.create',
    getSubscriptions: 'pubsub.subscriptions.list',
    getMetadata: 'pubsub.subscriptions.get',
    exists: 'pubsub.subscriptions.get',
    get: 'pubsub.subscriptions.get',
    setMetadata: 'pubsub.subscriptions.update',
    modifyPushConfig: 'pubsub.subscriptions.update',
    delete: 'pubsub.subscriptions.delete',
  };

  /** The subscription-admin permissions one Pub/Sub adapter's text needs. */
  function permissionsIn(text: string): string[] {
    const out = new Set<string>();
    for (const m of text.matchAll(/\.(createSubscription|getSubscriptions)\(/g))
      out.add(SUBSCRIPTION_CALL[m[1]!]!);
    // On a Subscription: chained (pubsub.subscription(n).getMetadata()) or through a variable holding one.
    const holders = [...text.matchAll(/\b(\w+)\s*=\s*[\w.]*\.subscription\(/g)].map((m) => m[1]!);
    const receiver = ['\\.subscription\\([^)]*\\)', ...holders.map((h) => `\\b${h}`)].join('|');
    for (const m of text.matchAll(new RegExp(`(?:${receiver})\\s*\\.(\\w+)\\(`, 'g')))
      if (m[1]! in SUBSCRIPTION_CALL) out.add(SUBSCRIPTION_CALL[m[1]!]!);
    return [...out].sort();
  }

  /** The subscription-admin permissions a unit's code needs: its Pub/Sub adapters' admin calls. */
  const subscriptionPermissions = (unit: Unit): string[] =>
    [
      ...new Set(
        sourceClosure(unit.entry)
          .map((file) => readFileSync(file, 'utf8'))
          .filter((text) => text.includes('@google-cloud/pubsub'))
          .flatMap(permissionsIn),
      ),
    ].sort();

  it('the custom role lists what the API calls, so the API cannot delete or re-point the push subscriptions', () => {
    const role = resourceOf(tf, 'google_project_iam_custom_role', 'worker_subscriptions');
    const api = units.find((u) => u.name === 'api')!;
    const needed = subscriptionPermissions(api);
    // The reading must see the registration's create-or-check (shared/src/adapters/pubsub/snapshot-subscriptions.ts).
    expect(needed).toEqual(
      expect.arrayContaining(['pubsub.subscriptions.create', 'pubsub.subscriptions.get']),
    );
    expect([...(role.permissions as string[])].sort()).toEqual(needed);
    // No other unit manages subscriptions but the snapshot function's retention, which only deletes (below):
    // the gateway only pulls from the one the API made for it.
    for (const u of units.filter((u) => u.name !== 'api' && u.name !== 'snapshot'))
      expect(subscriptionPermissions(u), u.name).toEqual([]);
    const roles = tf.locals.project_roles as Record<string, string[]>;
    const holders = Object.keys(roles).filter((k) =>
      roles[k]!.includes('${local.custom_roles.worker_subscriptions}'),
    );
    expect(holders).toEqual(['api']);
  });

  it('the reaper role lists what the snapshot function calls: it deletes worker subscriptions, nothing else', () => {
    const role = resourceOf(tf, 'google_project_iam_custom_role', 'worker_subscription_reaper');
    const snapshot = units.find((u) => u.name === 'snapshot')!;
    // The reading must see the retention's delete (shared/src/adapters/pubsub/subscription-reaper.ts).
    expect(subscriptionPermissions(snapshot)).toEqual(['pubsub.subscriptions.delete']);
    expect([...(role.permissions as string[])].sort()).toEqual(subscriptionPermissions(snapshot));
    const roles = tf.locals.project_roles as Record<string, string[]>;
    const holders = Object.keys(roles).filter((k) =>
      roles[k]!.includes('${local.custom_roles.worker_subscription_reaper}'),
    );
    expect(holders).toEqual(['fn-snapshot']);
  });

  it('the reading sees an admin call chained or through a variable, and not a pull', () => {
    const sub = 'const sub = this.pubsub.subscription(name, { flowControl: { maxMessages: 4 } });\n';
    expect(permissionsIn(`${sub}sub.on('message', h);\nawait sub.close();`)).toEqual([]);
    expect(permissionsIn(`${sub}await sub.delete();`)).toEqual(['pubsub.subscriptions.delete']);
    expect(permissionsIn('await pubsub.subscription(n).setMetadata(m);')).toEqual([
      'pubsub.subscriptions.update',
    ]);
    expect(permissionsIn('const [subs] = await pubsub.getSubscriptions();')).toEqual([
      'pubsub.subscriptions.list',
    ]);
  });
});

describe('Secret Manager grants are exactly the calls each reader makes, on the kinds of secret it reads', () => {
  const READER = join(repoRoot, 'shared/src/adapters/secret-manager/reader.ts');
  const PORTS = join(repoRoot, 'shared/src/ports/secrets.ts');
  /** The permission each Secret Manager RPC checks (https://cloud.google.com/secret-manager/docs/access-control). */
  const RPC_PERMISSION: Record<string, string> = {
    accessSecretVersion: 'secretmanager.versions.access',
    getSecretVersion: 'secretmanager.versions.get',
    listSecretVersions: 'secretmanager.versions.list',
    getSecret: 'secretmanager.secrets.get',
    listSecrets: 'secretmanager.secrets.list',
  };
  /**
   * The narrowest predefined role that holds each permission, grantable on a secret
   * (https://cloud.google.com/iam/docs/roles-permissions/secretmanager): secretAccessor holds ONLY
   * versions.access; viewer holds metadata (secrets.get/list, versions.get/list) and never the payload.
   */
  const LEAST_ROLE: Record<string, string> = {
    'secretmanager.versions.access': 'roles/secretmanager.secretAccessor',
    'secretmanager.versions.get': 'roles/secretmanager.viewer',
    'secretmanager.versions.list': 'roles/secretmanager.viewer',
    'secretmanager.secrets.get': 'roles/secretmanager.viewer',
    'secretmanager.secrets.list': 'roles/secretmanager.viewer',
  };
  /** The port a unit's code is typed against, per method of SecretManagerSecretReader. */
  const PORT_OF: Record<string, string> = { access: 'SecretReader', resolve: 'SecretVersionResolver' };
  /**
   * What each unit reads through a spec's references, and with which port method: proxy credentials
   * (spec.credentialsRef) and cloud-init scripts (spec.cloudInit.secretRef). The code check below keeps
   * the unit/method pairs honest; the kind is what the reference names (variables.tf's kinds).
   */
  const SPEC_READS: [unit: string, kind: string, method: string][] = [
    ['api', 'proxy-credentials', 'access'], // a lease response carries them
    ['gateway', 'proxy-credentials', 'access'], // it chains through the proxy with them
    ['probe', 'proxy-credentials', 'access'], // it authenticates its probes
    ['reconcile', 'proxy-credentials', 'resolve'], // only the version name, for the VM's metadata
    ['reconcile', 'cloud-init', 'access'], // the script goes into the VM's user-data
  ];

  const rpcNames = () =>
    Object.getOwnPropertyNames(SecretManagerServiceClient.prototype).filter(
      (n) => (/Secret/.test(n) && !/^match|Path$/.test(n)) || /IamPolicy|IamPermissions/.test(n),
    );

  /** SecretManagerSecretReader's methods and the RPCs each one makes. */
  function readerRpcs(): Map<string, string[]> {
    const text = readFileSync(READER, 'utf8');
    const body = /class SecretManagerSecretReader[^{]*\{([\s\S]*)\n\}/.exec(text)?.[1] ?? '';
    // Each member's text runs from its signature (two spaces in) to the next member's.
    const signature = /\n {2}((?:(?:private|protected|public|static|async)\s+)*)(\w+)\s*\(/g;
    const members = [...body.matchAll(signature)].map((m, i, all) => ({
      name: m[2]!,
      private: /\b(private|protected)\b/.test(m[1]!),
      text: body.slice(m.index, all[i + 1]?.index ?? body.length),
    }));
    const byName = new Map(members.map((m) => [m.name, m]));
    // A public method's RPCs include those of the helpers it calls (this.helper(…)), transitively.
    const rpcs = (name: string, seen: Set<string>): string[] => {
      const m = byName.get(name);
      if (!m || seen.has(name)) return [];
      seen.add(name);
      const own = [...m.text.matchAll(/this\.client\.(\w+)\(/g)].map((c) => c[1]!);
      const helpers = [...m.text.matchAll(/this\.(\w+)\(/g)].map((c) => c[1]!);
      return [...own, ...helpers.flatMap((h) => rpcs(h, seen))];
    };
    const out = new Map<string, string[]>();
    for (const m of members)
      if (!m.private && m.name !== 'constructor') out.set(m.name, [...new Set(rpcs(m.name, new Set()))]);
    expect([...out.keys()].sort()).toEqual(Object.keys(PORT_OF).sort());
    return out;
  }

  /** The reader methods a unit's code calls: the ports its import closure is typed against. */
  function portMethods(unit: Unit): string[] {
    const files = sourceClosure(unit.entry);
    if (!files.includes(READER)) return [];
    const texts = files.filter((f) => f !== READER && f !== PORTS).map((f) => readFileSync(f, 'utf8'));
    return Object.entries(PORT_OF)
      .filter(([, port]) => texts.some((t) => new RegExp(`\\b${port}\\b`).test(t)))
      .map(([method]) => method)
      .sort();
  }

  /** The grants secrets.tf makes: "kind reader role" for each reader of each kind. */
  function granted(): string[] {
    const out: string[] = [];
    for (const [resource, readers, grants] of [
      ['reader', 'secret_readers', 'secret_grants'],
      ['metadata_reader', 'secret_metadata_readers', 'secret_metadata_grants'],
    ] as const) {
      const block = resourceOf(tf, 'google_secret_manager_secret_iam_member', resource);
      expect(block.for_each).toBe(`\${local.${grants}}`);
      expect(String(tf.locals[grants])).toContain(`local.${readers}`);
      const byKind = tf.locals[readers] as Record<string, Record<string, string>>;
      for (const [kind, members] of Object.entries(byKind)) {
        for (const [reader, member] of Object.entries(members)) {
          // The label is the account: a grant named "reconcile" goes to reconcile's account.
          const account = /^\$\{google_service_account\.(?:function\["(\w+)"\]|(\w+))\.member\}$/.exec(
            member,
          );
          expect((account?.[1] ?? account?.[2])?.replaceAll('_', '-'), member).toBe(reader);
          out.push(`${kind} ${reader} ${block.role}`);
        }
      }
    }
    return out.sort();
  }

  it('only reader.ts calls Secret Manager, and every RPC it makes has a known permission', () => {
    const rpcs = rpcNames();
    expect(rpcs).toEqual(expect.arrayContaining(['accessSecretVersion', 'getSecretVersion']));
    const sources = [join(repoRoot, 'functions'), join(repoRoot, 'shared/src')].flatMap((dir) =>
      readdirSync(dir, { recursive: true, encoding: 'utf8' })
        .filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts') && !f.includes('node_modules'))
        .map((f) => join(dir, f)),
    );
    const callers = sources.filter((f) => {
      const text = readFileSync(f, 'utf8');
      return rpcs.some((rpc) => new RegExp(`\\.${rpc}\\(`).test(text));
    });
    expect(callers).toEqual([READER]);
    const used = [...readerRpcs().values()].flat();
    expect(used.length).toBeGreaterThan(0);
    for (const rpc of used) expect(Object.keys(RPC_PERMISSION), rpc).toContain(rpc);
  });

  it("the reader methods each unit's code calls are the ones SPEC_READS lists", () => {
    const fromCode = units.flatMap((u) => portMethods(u).map((m) => `${u.name} ${m}`)).sort();
    const listed = [...new Set(SPEC_READS.map(([unit, , method]) => `${unit} ${method}`))].sort();
    expect(fromCode).toEqual(listed);
    // And the kinds: reconcile resolves the credentials reference, and reads the cloud-init one.
    const cloudInit = readFileSync(join(repoRoot, 'functions/reconcile/src/cloud-init.ts'), 'utf8');
    expect(cloudInit).toMatch(/spec\.credentialsRef[\s\S]{0,120}secrets\.resolve\(/);
    expect(cloudInit).toMatch(/ci\.secretRef[\s\S]{0,60}secrets\.access\(/);
  });

  it('every permission a reader needs on a kind is granted on it, with the narrowest role, and nothing more', () => {
    const rpcsOf = readerRpcs();
    const needs: string[] = [];
    const need = (kind: string, reader: string, permission: string) =>
      needs.push(`${kind} ${reader} ${LEAST_ROLE[permission]}`);
    for (const [unit, kind, method] of SPEC_READS)
      for (const rpc of rpcsOf.get(method) ?? []) need(kind, unit, RPC_PERMISSION[rpc]!);
    // Cloud Run reads a secret-backed env var as the service's own account (versions.access): every kind
    // a service's env may name, present in the sample variables or not (admin-tokens is optional).
    for (const u of units.filter((u) => u.kind !== 'function')) {
      const container = nested(
        resourceOf(tf, 'google_cloud_run_v2_service', u.name),
        'template',
        'containers',
      );
      const envBlocks = (container.dynamic as { env?: Block[] }).env ?? [];
      for (const block of envBlocks) {
        const local = /local\.(\w+_secret_env)\b/.exec(String(block.for_each))?.[1];
        for (const kind of Object.values((local ? tf.locals[local] : {}) as Record<string, string>))
          need(kind, u.name, 'secretmanager.versions.access');
      }
      for (const kind of Object.values(unitOf(u.name).env.secrets))
        expect(needs).toContain(`${kind} ${u.name} roles/secretmanager.secretAccessor`);
    }
    for (const u of units.filter((u) => u.kind === 'function'))
      expect(unitOf(u.name).env.secrets).toEqual({});
    // The proxy VM reads its credentials at boot with :access (the default startup script).
    const script = readFileSync(join(repoRoot, 'shared/src/domain/cloud-init/startup-script.ts'), 'utf8');
    expect(script).toContain('/\\${SECRET_NAME}:access"');
    need('proxy-credentials', 'proxy-vm', 'secretmanager.versions.access');
    expect(needs).toContain('proxy-credentials reconcile roles/secretmanager.viewer');
    expect(granted()).toEqual([...new Set(needs)].sort());
  });
});

describe('docs/deploy.md describes the Terraform as it is', () => {
  const deploy = () => readFileSync(join(repoRoot, 'docs/deploy.md'), 'utf8');
  const words = ['zero', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine'];

  it('counts the APIs, custom roles, log-based metrics and alert policies it creates', () => {
    const text = deploy();
    expect(resourceOf(tf, 'google_project_service', 'enabled').for_each).toBe('${local.services}');
    const apis = new Set(String(tf.locals.services).match(/"[a-z]+\.googleapis\.com"/g)).size;
    expect(apis).toBeGreaterThan(10);
    expect(text).toContain(`| ${apis} \`google_project_service\``);
    const roles = Object.values(tf.resource.google_project_iam_custom_role ?? {}).length;
    expect(text).toContain(`${words[roles]} custom roles`);
    expect(text).not.toMatch(new RegExp(`\\b(?!${words[roles]}\\b)\\w+ custom roles`));
    // + one distribution per gateway.traffic field, and the two others: worker_snapshot_age and probe_latency
    const metrics =
      Object.keys(tf.locals.log_counters as object).length +
      Object.keys(tf.locals.gateway_traffic as object).length +
      2;
    expect(Object.keys(tf.resource.google_logging_metric ?? {}).sort()).toEqual([
      'counter',
      'gateway_traffic',
      'probe_latency',
      'worker_snapshot_age',
    ]);
    const policies = Object.keys(tf.resource.google_monitoring_alert_policy ?? {}).length;
    expect(text).toContain(`${metrics} log-based metrics, ${policies} alert policies`);
  });

  it('§ Prerequisites names every project-wide grant that reaches beyond the plane in a shared project', () => {
    // Writing logs and metrics, and receiving Eventarc events, touch nothing of another workload's.
    const confined = new Set([
      'roles/logging.logWriter',
      'roles/monitoring.metricWriter',
      'roles/eventarc.eventReceiver',
    ]);
    const text = deploy();
    const prerequisites = text.slice(
      text.indexOf('## Prerequisites'),
      text.indexOf('\n## ', text.indexOf('## Prerequisites') + 1),
    );
    const granted = JSON.stringify(tf.locals.project_roles);
    const predefined = [...granted.matchAll(/roles\/[a-zA-Z0-9.]+/g)].map((m) => m[0]);
    const custom = [...granted.matchAll(/\$\{local\.custom_roles\.(\w+)\}/g)].map((m) =>
      String(resourceOf(tf, 'google_project_iam_custom_role', m[1]!).role_id).replace(
        '${var.custom_role_suffix}',
        '',
      ),
    );
    expect(custom.length).toBeGreaterThan(0);
    const named = [...new Set([...predefined, ...custom])].filter((r) => !confined.has(r));
    expect(named.length).toBeGreaterThan(custom.length);
    for (const role of named) expect(prerequisites, role).toContain(`\`${role}\``);
  });

  it('its Eventarc paragraph names exactly the functions never retried, and the gen2 retry window', () => {
    const text = deploy();
    const paragraph = text.slice(
      text.indexOf('Two delivery modes exist'),
      text.indexOf('\n\n', text.indexOf('Two delivery modes exist')),
    );
    const listed = /\n?([\w, ]+?) \(`retry: false`\)/.exec(paragraph)?.[1] ?? '';
    const neverRetried = Object.entries(loadFunctionTable().functions)
      .filter(([, f]) => !f.retry)
      .map(([name]) => name);
    expect(
      listed
        .split(/,\s*|\s+and\s+/)
        .map((w) => w.trim())
        .filter(Boolean)
        .sort(),
    ).toEqual(neverRetried.sort());
    expect(paragraph).toContain('24 hours');
    expect(paragraph).not.toMatch(/7 days/);
  });

  it('its terraform.tfvars example sets the region its shell steps use: the images are pushed to $REGION', () => {
    // Step 3 pushes to "$REGION-docker.pkg.dev", the repository step 2 created in var.region, and Cloud
    // Run pulls from var.region's: a $REGION other than the variable's would push to a registry that does
    // not exist and deploy images that are not there.
    const text = deploy();
    const shell = text.match(/^export REGION=(\S+)/m)?.[1];
    expect(text).toContain('_REGION="$REGION"');
    const hcl = text
      .split('With `terraform/terraform.tfvars` holding')[1]
      ?.match(/```hcl\n([\s\S]*?)```/)?.[1];
    expect(hcl?.match(/^region\s*=\s*"([^"]+)"/m)?.[1]).toBe(shell);
    expect(shell).toBe(tf.variable.region!.default);
  });

  it("the CONNECT gateway VM's startup script starts a gateway the config loader accepts", () => {
    const file = 'terraform/scripts/gateway-connect-startup.sh';
    // The script the CONNECT gateway VMs boot with (gateway_connect.tf; gateway-connect.test.ts checks the rest).
    expect(tf.locals.gateway_connect_script).toBe(
      `\${file("\${path.module}/${file.replace('terraform/', '')}")}`,
    );
    const script = readFileSync(join(repoRoot, file), 'utf8');
    expect(script).toContain('docker run');
    // What each `$(…)` of the script reads on the VM, as this file's samples.
    const fromVm: Record<string, string> = {
      $project: SAMPLE_PROJECT,
      '$(md instance/attributes/region)': 'us-central1',
      // Optional metadata (Terraform's log_level and gateway_gc_marking), the image's defaults without.
      $log_level: 'debug',
      $gc_marking: 'incremental',
      '$(md instance/attributes/control-plane-url)': configOf<{ CONTROL_PLANE_URL: string }>('gateway')
        .CONTROL_PLANE_URL,
    };
    const env: Record<string, string> = {};
    for (const m of script.matchAll(/-e (\w+)=("[^"]*"|\S+)/g)) {
      const raw = m[2]!.replace(/^"|"$/g, '');
      env[m[1]!] = fromVm[raw] ?? raw;
      expect(env[m[1]!], `${m[1]} = ${raw}`).not.toMatch(/\$/);
    }
    // The env file the script writes from the gateway-clients secret.
    const fromSecret = [...script.matchAll(/printf '(\w+)=%s\\n' "\$users" >("?[\w/.$-]+"?)/g)];
    expect(fromSecret.map((m) => m[1])).toEqual(['GATEWAY_CLIENT_USERS']);
    expect(script).toContain(`--env-file=${fromSecret[0]![2]}`);
    expect(script).toMatch(/secrets\/\$\(md instance\/attributes\/clients-secret\)\/versions\/latest:access/);
    const gatewayEnv = { ...env, GATEWAY_CLIENT_USERS: SECRET_SAMPLES['gateway-clients']! };
    const config = loadGatewayConfig([], gatewayEnv);
    expect(config).toMatchObject({
      GATEWAY_PROXY_PORT: 8081,
      GOOGLE_CLOUD_PROJECT: SAMPLE_PROJECT,
      LOG_LEVEL: 'debug',
      GATEWAY_GC_MARKING: 'incremental',
    });
    expect(config.CONTROL_PLANE_URL).toBe(
      configOf<{ CONTROL_PLANE_URL: string }>('gateway').CONTROL_PLANE_URL,
    );
    // Without the secret's value it would not start (what the earlier command did).
    expect(() => loadGatewayConfig([], env)).toThrow(/no client credentials/);
    // On host networking nothing publishes the ports, and COS's host firewall admits only SSH.
    if (script.includes('--network=host')) {
      const accepted = [
        ...script.matchAll(/iptables -w -A INPUT -p tcp -m multiport --dports ([\d,]+) -j ACCEPT/g),
      ]
        .flatMap((m) => m[1]!.split(','))
        .map(Number);
      expect(accepted).toEqual(expect.arrayContaining([config.GATEWAY_PROXY_PORT, config.PORT]));
    }
    // The VM's access token never rides on a command line (readable by every process on the VM).
    expect(script).not.toMatch(/-H "Authorization: Bearer \$token"/);
  });

  it('the teardown deletes what the CONNECT gateway VM put in the network before destroying it', () => {
    const teardown = deploy().split('## Tear it down')[1] ?? '';
    const destroyAt = teardown.indexOf('terraform -chdir=terraform destroy');
    for (const made of deploy().matchAll(/gcloud compute (instances|addresses) create (\S+)/g)) {
      const del = teardown.indexOf(`gcloud compute ${made[1]} delete ${made[2]}`);
      expect(del, `${made[1]} ${made[2]}`).toBeGreaterThan(-1);
    }
    expect(destroyAt).toBeGreaterThan(-1);
    expect(teardown).toMatch(/firewall-rules delete/);
  });

  it("the /v1/fetch example puts IAM's token where Cloud Run reads it and the client user in Authorization", () => {
    const call = /curl [^\n]*X-Serverless-Authorization[\s\S]*?\/v1\/fetch[^\n]*/.exec(deploy())?.[0] ?? '';
    expect(call).toContain('-H "X-Serverless-Authorization: Bearer $(gcloud auth print-identity-token');
    expect(call).toContain('-H "Authorization: Basic $(printf');
    expect(call).not.toContain('Proxy-Authorization');
    expect(deploy()).not.toMatch(/Cloud Run leaves alone/);
  });

  it('warns that a subnet used by Direct VPC egress outlives the destroy by 1–2 hours', () => {
    const teardown = deploy().split('## Tear it down')[1] ?? '';
    const direct = Object.entries(tf.resource.google_cloud_run_v2_service ?? {}).flatMap(([, service]) => {
      const access = (nested(service as Block, 'template').vpc_access as Block[] | undefined)?.[0];
      const nics = (access?.network_interfaces as Block[] | undefined) ?? [];
      return nics.map((n) => /google_compute_subnetwork\.(\w+)\.id/.exec(String(n.subnetwork))?.[1]);
    });
    expect(direct).toEqual(['gateway_egress']);
    for (const subnet of direct) expect(teardown).toContain(`google_compute_subnetwork.${subnet}`);
    expect(teardown).toMatch(/1–2 hours[\s\S]*run the\s+same `terraform destroy` again/);
  });

  it("README gives deploy.md's steps in deploy.md's order: the image build needs the bootstrap apply's registry", () => {
    const steps = [...deploy().matchAll(/^\*\*(\d)\. ([^*]+)\*\*/gm)].map((m) => `${m[1]} ${m[2]}`);
    expect(steps.map((s) => s.slice(0, 1))).toEqual(['1', '2', '3', '4']);
    expect(steps[1]).toMatch(/Bootstrap the image registry, the accounts/);
    expect(steps[2]).toMatch(/Build the api and gateway images/);
    expect(deploy()).toContain('-target=google_artifact_registry_repository.images');
    const readme = (readFileSync(join(repoRoot, 'README.md'), 'utf8').split('## Deploying')[1] ?? '').replace(
      /\s+/g,
      ' ',
    );
    const at = (text: string) => {
      const i = readme.indexOf(text);
      expect(i, text).toBeGreaterThanOrEqual(0);
      return i;
    };
    const order = [
      at('build the function sources'),
      at('creates the Artifact Registry repository'),
      at('build and push the api and gateway images'),
      at('an apply that starts everything'),
    ];
    expect([...order].sort((a, b) => a - b)).toEqual(order);
  });

  // Cloud Monitoring refuses an alert policy on a log-based metric for up to 10 minutes after the metric is
  // made (404 "Cannot find metric(s)"), and the provider does not wait (hashicorp/terraform-provider-google
  // #11102): made in the same apply, every policy below fails a fresh project's first full apply.
  it('the bootstrap apply makes every log-based metric an alert policy reads, long before step 4 makes the policy', () => {
    const read = new Set(
      Object.values(tf.resource.google_monitoring_alert_policy ?? {}).flatMap((policy) =>
        [...JSON.stringify(policy).matchAll(/google_logging_metric\.(\w+)/g)].map((m) => m[1]!),
      ),
    );
    expect(read.size).toBeGreaterThan(0);
    for (const name of read) resourceOf(tf, 'google_logging_metric', name);
    const text = deploy();
    const bootstrap = /^\*\*2\. [\s\S]*?```bash\n([\s\S]*?)```/m.exec(text)?.[1] ?? '';
    expect(bootstrap).toContain('terraform -chdir=terraform apply');
    const targets = new Set(
      [...bootstrap.matchAll(/-target=google_logging_metric\.(\w+)/g)].map((m) => m[1]!),
    );
    expect([...read].filter((name) => !targets.has(name))).toEqual([]);
    // ... and the full apply that makes the policies is a later step.
    expect(text.indexOf('**4. Apply everything.**')).toBeGreaterThan(text.indexOf(bootstrap));
    const readme = (readFileSync(join(repoRoot, 'README.md'), 'utf8').split('## Deploying')[1] ?? '').replace(
      /\s+/g,
      ' ',
    );
    expect(readme).toMatch(/a first, targeted `terraform apply` that creates [^.]*the log-based metrics/);
  });

  // None of the other listed roles carries cloudbuild.builds.create: a deployer who is not Owner and holds
  // exactly the list stops at step 3.
  // IAM is eventually consistent: a grant made a moment earlier in the same apply may not be seen yet when
  // Cloud Run checks that a new revision's account can read the secrets in its env ("Permission denied on
  // secret … for Revision service account", hashicorp/terraform-provider-google#13786), or when a function's
  // build runs as pp-builder. depends_on orders the calls, it does not wait for propagation.
  it('the bootstrap apply makes every grant a service or function waits for, minutes before step 4 creates it', () => {
    const waitedFor = new Set(
      ['google_cloud_run_v2_service', 'google_cloudfunctions2_function'].flatMap((type) =>
        Object.values(tf.resource[type] ?? {}).flatMap(
          (block) => ((block as Block).depends_on as string[] | undefined) ?? [],
        ),
      ),
    );
    const grants = [...waitedFor]
      .map((d) => /^\$\{(google_\w+_iam_member\.\w+)\}$/.exec(d)?.[1])
      .filter((g): g is string => g !== undefined);
    expect(grants).toEqual(
      expect.arrayContaining([
        'google_project_iam_member.component',
        'google_secret_manager_secret_iam_member.reader',
        // The first proxy's create needs actAs on the VM account and reconcile's read of its secret's
        // metadata; the API's first create publishes to the reconcile topic.
        'google_service_account_iam_member.reconcile_attaches_proxy_vm_account',
        'google_secret_manager_secret_iam_member.metadata_reader',
        'google_pubsub_topic_iam_member.component',
      ]),
    );
    const bootstrap = /^\*\*2\. [\s\S]*?```bash\n([\s\S]*?)```/m.exec(deploy())?.[1] ?? '';
    const targets = new Set([...bootstrap.matchAll(/-target=(\S+)/g)].map((m) => m[1]!));
    expect(grants.filter((g) => !targets.has(g))).toEqual([]);
  });

  it('the prerequisites name the role that runs the image build the steps run', () => {
    const text = deploy();
    expect(text).toMatch(/gcloud builds submit --config terraform\/images\/cloudbuild\.yaml/);
    const prerequisites = text.split('\n## Prerequisites\n')[1]!.split('\n## ')[0]!.replace(/\s+/g, ' ');
    expect(prerequisites).toMatch(/Cloud Build Editor/);
  });

  // A Cloud Run service reads its secret-backed env at version `latest` when its revision starts: a secret
  // with no version yet fails the revision, and with it step 4's apply.
  it('step 2 gives a first version to every kind of secret a Cloud Run service reads at start', () => {
    const text = deploy();
    const step2 = text.slice(text.indexOf('**2. '), text.indexOf('**3. '));
    const lines = step2.split('\n');
    const defaults = (tf.variable.secrets!.default ?? {}) as Record<string, { kind: string }>;
    const kinds = new Set(
      [tf.locals.api_secret_env, tf.locals.gateway_secret_env].flatMap((env) =>
        Object.values(env as Record<string, string>),
      ),
    );
    expect([...kinds].sort()).toEqual(['admin-tokens', 'discovery-tokens', 'gateway-clients']);
    for (const kind of kinds) {
      const ids = Object.entries(defaults)
        .filter(([, s]) => s.kind === kind)
        .map(([id]) => id);
      const given = lines.some(
        (line, i) =>
          /gcloud secrets versions add/.test(line) &&
          (ids.some((id) => line.includes(`versions add ${id} `)) || (lines[i - 1] ?? '').includes(kind)),
      );
      expect(given, `no first version of the ${kind} secret in step 2`).toBe(true);
    }
  });

  it("operations.md gives the gateway's egress as Terraform builds it: Direct VPC egress, the connector only the probe's", () => {
    const gateway = nested(
      resourceOf(tf, 'google_cloud_run_v2_service', 'gateway'),
      'template',
      'vpc_access',
    );
    expect(gateway.connector).toBeUndefined();
    expect(nested(gateway, 'network_interfaces').subnetwork).toBe(
      '${google_compute_subnetwork.gateway_egress.id}',
    );
    const fn = nested(resourceOf(tf, 'google_cloudfunctions2_function', 'fn'), 'service_config');
    expect(String(fn.vpc_connector)).toContain('local.proxy_egress_functions');
    expect(tf.locals.proxy_egress_functions).toBe('${toset(["probe"])}');
    const ops = readFileSync(join(repoRoot, 'docs/operations.md'), 'utf8').replace(/\s+/g, ' ');
    // Every sentence that puts a VPC connector on a path names it as the probe's.
    const sentences = ops.split(/(?<=[.:])\s/).filter((t) => /VPC connector/.test(t));
    expect(sentences.length).toBeGreaterThan(0);
    for (const t of sentences) expect(t).toMatch(/probe/);
    expect(ops).toMatch(/Direct VPC egress on (the )?`proxyplane-gateway-egress`/);
  });

  it('names every custom role the teardown leaves reserved, and the suffix that applies again past 7 days', () => {
    const teardown = deploy().split('## Tear it down')[1] ?? '';
    const roles = Object.values(tf.resource.google_project_iam_custom_role ?? {}) as Block[];
    expect(roles.length).toBe(4);
    for (const role of roles) {
      // Every ID takes the suffix, so that one variable renames them all.
      expect(role.role_id).toMatch(/^\w+\$\{var\.custom_role_suffix\}$/);
      expect(teardown).toContain(`\`${(role.role_id as string).replace('${var.custom_role_suffix}', '')}\``);
    }
    expect(teardown).toContain('-var custom_role_suffix=');
    expect(tf.variable.custom_role_suffix?.default).toBe('');
  });

  it('lists every collection with a TTL policy', () => {
    const ttl = /TTL on `expireAt` of ([^;|]+)/.exec(deploy())?.[1] ?? '';
    const documented = [...ttl.matchAll(/`(\w+)`/g)].map((m) => m[1]).sort();
    const collections = values.local('collections') as Record<string, string>;
    const fields = values.local('ttl_fields') as Record<string, { collection: string; field: string }>;
    expect(Object.values(fields).every((f) => f.field === 'expireAt')).toBe(true);
    expect(documented).toEqual(
      Object.values(fields)
        .map((f) => f.collection)
        .filter((c) => Object.values(collections).includes(c))
        .sort(),
    );
  });
});

describe('the topology tables agree with each other where the code assumes they do', () => {
  /** A job's period from its cron: every minute, or every N minutes; anything else fails here, to be added. */
  const periodMs = (cron: string): number => {
    if (cron === '* * * * *') return 60_000;
    const every = /^\*\/(\d+) \* \* \* \*$/.exec(cron);
    if (!every) throw new Error(`a schedule this check does not read: ${cron}`);
    return Number(every[1]) * 60_000;
  };
  const jobOn = (topic: string) => {
    const jobs = Object.values(loadScheduleTable().jobs).filter((j) => j.topic === topic);
    expect(jobs).toHaveLength(1);
    return jobs[0]!;
  };

  it("a push subscription's ack deadline is its function's timeout (docs/operations.md)", () => {
    // Shorter, a pass still running is delivered again (and dead-lettered at last); the rule is stated
    // once, in the tables, and nothing else holds them together.
    const { functions } = loadFunctionTable();
    const { topics } = loadPubSubTable();
    const pairs = Object.entries(functions).map(([name, f]) => [
      name,
      topics[f.topic]?.consumer === name ? topics[f.topic]!.ackDeadlineSeconds : 'not its consumer',
      f.timeoutSeconds,
    ]);
    expect(pairs).toEqual(
      Object.entries(functions).map(([name, f]) => [name, f.timeoutSeconds, f.timeoutSeconds]),
    );
  });

  it("gc's deadlines are measured against its function's timeout, and a listing at its worst ends before the orphans'", () => {
    // The sweep gives an orphan's calls up at GC_RUN_DEADLINE_MS and keeps the rest of GC_TIMEOUT_MS to
    // record the run: a timeout shorter than the code assumes cuts the sweep off, recording nothing and
    // logging no failure. A listing page begun at its budget's end may take one call's worst case (every
    // attempt unanswered to its deadline under a slow Compute API, gce/retry.ts defaultRetry).
    const { attempts, attemptTimeoutMs, maxMs } = defaultRetry;
    const worstCallMs = attempts * (attemptTimeoutMs! + maxMs);
    expect(GC_TIMEOUT_MS).toBe(loadFunctionTable().functions.gc!.timeoutSeconds * 1000);
    expect(GC_RUN_DEADLINE_MS).toBeLessThan(GC_TIMEOUT_MS);
    expect(GC_LIST_BUDGET_MS + worstCallMs).toBeLessThanOrEqual(GC_RUN_DEADLINE_MS);
  });

  it("the snapshot tick's upkeep deadline leaves a unit begun at it, at its worst, and the run's record inside the timeout", () => {
    // Upkeep begins no unit of work (the parts sweep's batch, a worker's removal, a page or a deletion of
    // subscriptions) past UPKEEP_DEADLINE_MS after the run's claim (snapshot handler.ts). One begun just
    // before it may take its worst case — a subscription delete cut at SUBSCRIPTION_DELETE_TIMEOUT_MS, or a
    // Firestore call as long — then the subscription cursor's save, a call at most as long: all before the
    // run's record is given up, before the timeout, past which the tick is redelivered (a whole pass and
    // upkeep again) and its run is not recorded. A worker's removal is several Firestore calls; a Firestore as slow
    // as that on each can still reach the timeout.
    // The deadline counts from after the job run's claim, which may itself take CLAIM_TIMEOUT_MS (bounded
    // since c1fd3c48; the pass and upkeep wait for it), and the record is given up RECORD_MARGIN_MS before
    // the timeout (bounded-job-runs.ts).
    const worstUnitMs = SUBSCRIPTION_DELETE_TIMEOUT_MS;
    const cursorMs = worstUnitMs; // the subscription cursor's save
    expect(CLAIM_TIMEOUT_MS + UPKEEP_DEADLINE_MS + worstUnitMs + cursorMs).toBeLessThanOrEqual(
      loadFunctionTable().functions.snapshot!.timeoutSeconds * 1000 - RECORD_MARGIN_MS,
    );
    // And the subscription budget is no longer than what the deadline leaves: it is cut by the deadline.
    expect(SUBSCRIPTION_RETENTION_BUDGET_MS).toBeLessThan(UPKEEP_DEADLINE_MS);
  });

  it("reconcile's pass-start budget leaves a pass begun at its end its get and insert, each at its worst, before the timeout", () => {
    // What this checks: PASS_START_BUDGET_MS plus two calls at their worst case (every attempt unanswered to
    // its deadline, gce/retry.ts defaultRetry) — a creating pass's get of the instance and its insert — fit
    // in reconcile's timeout. It does not bound every path: a pass can make more calls (get → missing →
    // lastCreateFailure → insert → 409 → get), and an inline delete begun just inside the budget may add a
    // not-ready get and a publish; a Compute API that slow on every call can still reach the timeout, and
    // Pub/Sub then redelivers (handler.ts PASS_START_BUDGET_MS).
    const { attempts, attemptTimeoutMs, maxMs } = defaultRetry;
    const worstCallMs = attempts * (attemptTimeoutMs! + maxMs);
    expect(PASS_START_BUDGET_MS + 2 * worstCallMs).toBeLessThanOrEqual(
      loadFunctionTable().functions.reconcile!.timeoutSeconds * 1000,
    );
  });

  it("requeue's window and the probe's tick are the periods their jobs are scheduled at", () => {
    // Either one shorter than its schedule leaves part of each period unswept or unprobed, with no error.
    expect(tickPeriodMs(configOf<RequeueConfig>('requeue'))).toBe(periodMs(jobOn('ticks-requeue').schedule));
    const probe = configOf<{ PROBE_TICK_PERIOD_SECONDS: number }>('probe');
    expect(probe.PROBE_TICK_PERIOD_SECONDS * 1000).toBe(periodMs(jobOn('ticks-probe').schedule));
  });
});
