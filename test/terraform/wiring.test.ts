// biome-ignore-all lint/suspicious/noTemplateCurlyInString: Terraform expressions parse to "${…}" strings.
// The deployed wiring, instantiated from the .tf files (parsed with @cdktf/hcl2json) over the tables
// module's outputs: every function folder has a function with the trigger its code registers, every
// topic a function consumes exists, the Scheduler jobs equal the shared schedule table, every secret
// notifies the rotation topic.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { DEAD_LETTER_INSPECT_ACK_DEADLINE_SECONDS } from '../../shared/src/adapters/pubsub/topology-plan.js';
import { loadFunctionTable, loadPubSubTable, loadScheduleTable } from '../../shared/src/config/topology.js';
import { cloudRunServices } from '../../terraform/build/units.js';
import { evaluate, refTo, type Scope } from './support/expr.js';
import { type Block, loadModule, nested, resourceOf, type TfConfig } from './support/hcl.js';
import { functionsDir, repoRoot, terraformDir } from './support/paths.js';
import { type TablesOut, wiringTables } from './support/tables.js';

let tf: TfConfig;
let tables: TablesOut;
beforeAll(async () => {
  tf = await loadModule(terraformDir);
  tables = wiringTables();
});

const functionRows = Object.entries(loadFunctionTable().functions);
const scope = (key: string, value: unknown, extra: Record<string, unknown> = {}): Scope => ({
  iterators: {
    each: { key, value },
    ...Object.fromEntries(Object.entries(extra).map(([k, v]) => [k, { key, value: v }])),
  },
  locals: tf.locals,
  modules: { tables: tables as unknown as Record<string, unknown> },
});
/** A for_each resource instantiated for one key of the map it iterates over. */
const instance = (block: Block, key: string, value: unknown) => evaluate(block, scope(key, value)) as Block;
const topicRef = (topic: string, attribute = '.id') => refTo('google_pubsub_topic.topic', topic, attribute);

describe('functions: one per function folder, with the trigger its code expects', () => {
  it('the root reads the tables through the tables module, from shared/topology', () => {
    expect(tf.module.tables).toMatchObject({
      source: './modules/tables',
      topology_dir: '${path.module}/../shared/topology',
    });
  });

  it('every folder under functions/ is a Cloud Run service or a row of functions.json', () => {
    const folders = readdirSync(functionsDir, { withFileTypes: true }).filter((d) => d.isDirectory());
    for (const folder of folders) {
      const isService = (cloudRunServices as readonly string[]).includes(folder.name);
      const row = functionRows.find(([, f]) => f.source === `functions/${folder.name}`);
      expect(
        isService || row !== undefined,
        `functions/${folder.name} is neither deployed as a function nor a service`,
      ).toBe(true);
    }
  });

  it('deploys one gen2 nodejs22 function per row, with its own service account and internal ingress', () => {
    const fn = resourceOf(tf, 'google_cloudfunctions2_function', 'fn');
    expect(fn.for_each).toBe('${module.tables.functions}');
    expect(Object.keys(tables.functions).sort()).toEqual(functionRows.map(([name]) => name).sort());
    for (const [name, row] of functionRows) {
      const deployed = instance(fn, name, tables.functions[name]);
      expect(deployed.name).toBe(name);
      expect(nested(deployed, 'build_config')).toMatchObject({
        runtime: 'nodejs22',
        entry_point: row.target,
      });
      expect(nested(deployed, 'service_config')).toMatchObject({
        service_account_email: refTo('google_service_account.function', name, '.email'),
        ingress_settings: 'ALLOW_INTERNAL_ONLY',
        timeout_seconds: row.timeoutSeconds,
        available_memory: row.memory,
      });
    }
  });

  for (const [name, row] of functionRows) {
    // A folder without src/index.ts has no entry point yet (its wiring is still to come): the build step
    // refuses to package it, so there is nothing deployable to check, and the test name says so.
    const present = existsSync(join(repoRoot, row.source, 'src/index.ts'));
    const why = existsSync(join(repoRoot, row.source))
      ? ' (no src/index.ts yet)'
      : ' (folder not on this branch yet)';
    it.skipIf(!present)(
      `${name}: ${row.source} registers the entry point Terraform deploys${present ? '' : why}`,
      () => {
        const source = readFileSync(join(repoRoot, row.source, 'src/index.ts'), 'utf8');
        expect(
          source,
          `${row.source}/src/index.ts must register '${row.target}' with functions-framework`,
        ).toMatch(new RegExp(`cloudEvent[^(]*\\(\\s*['"\`]${row.target}['"\`]`));
        expect(tables.functions[name]?.entry_point).toBe(row.target);
      },
    );
  }

  it('pubsub-push mode: each function is pushed to from its own topic, with the table retry and dead-letter policy', () => {
    const push = resourceOf(tf, 'google_pubsub_subscription', 'push');
    expect(push.for_each).toBe('${local.push_mode ? module.tables.push_subscriptions : {}}');
    expect(tf.locals.push_mode).toBe('${var.function_trigger == "pubsub-push"}');
    const pubsub = loadPubSubTable();
    for (const [name, row] of functionRows) {
      const subscriptionName = tables.functions[name]!.subscription;
      const sub = instance(push, subscriptionName, tables.push_subscriptions[subscriptionName]);
      const table = pubsub.topics[row.topic]!;
      expect(sub.topic, `${name} is triggered by ${row.topic}`).toEqual(topicRef(row.topic));
      expect(sub.ack_deadline_seconds).toBe(table.ackDeadlineSeconds);
      expect(nested(sub, 'retry_policy')).toEqual({
        minimum_backoff: `${table.retry!.minimumBackoffSeconds}s`,
        maximum_backoff: `${table.retry!.maximumBackoffSeconds}s`,
      });
      expect(nested(sub, 'dead_letter_policy')).toEqual({
        dead_letter_topic: topicRef(pubsub.deadLetterTopic),
        max_delivery_attempts: table.maxDeliveryAttempts,
      });
      const endpoint = nested(sub, 'push_config').push_endpoint as string;
      expect(endpoint).toBe(
        `<google_cloudfunctions2_function.fn[${name}].service_config[0].uri>/projects/<var.project_id>/topics/${row.topic}`,
      );
      expect(nested(sub, 'push_config', 'oidc_token').service_account_email).toEqual(
        refTo('google_service_account.pubsub_push', undefined, '.email'),
      );
    }
  });

  it('eventarc mode: each function gets an event trigger on its topic, retried exactly where the table says', () => {
    const fn = resourceOf(tf, 'google_cloudfunctions2_function', 'fn');
    const dynamicTrigger = nested(fn, 'dynamic', 'event_trigger');
    expect(dynamicTrigger.for_each).toBe('${local.push_mode ? [] : [each.value]}');
    for (const [name, row] of functionRows) {
      const content = nested(
        evaluate(
          dynamicTrigger,
          scope(name, tables.functions[name], { event_trigger: tables.functions[name] }),
        ) as Block,
        'content',
      );
      expect(content).toMatchObject({
        event_type: 'google.cloud.pubsub.topic.v1.messagePublished',
        pubsub_topic: topicRef(row.topic),
        retry_policy: row.retry ? 'RETRY_POLICY_RETRY' : 'RETRY_POLICY_DO_NOT_RETRY',
      });
    }
  });

  it('the push identity may invoke every function', () => {
    const invoker = resourceOf(tf, 'google_cloud_run_v2_service_iam_member', 'push_invokes_function');
    expect(invoker.for_each).toBe('${google_cloudfunctions2_function.fn}');
    expect(invoker).toMatchObject({
      role: 'roles/run.invoker',
      member: '${google_service_account.pubsub_push.member}',
    });
  });

  // depends_on orders the calls; a grant is in force everywhere only minutes later. Without the wait a
  // fresh project's first ticks could be refused 403 five times and dead-lettered (the alert firing at
  // once), and a secret's create could find Secret Manager not yet allowed to publish its notifications.
  it('the push subscriptions and the secrets wait until the grants they use are in force', () => {
    const settle = resourceOf(tf, 'time_sleep', 'push_grants_settle');
    expect(settle.create_duration).toBe('${var.iam_propagation_wait}');
    const triggers = JSON.stringify(settle.triggers);
    for (const grant of [
      'google_cloud_run_v2_service_iam_member.push_invokes_function',
      'google_service_account_iam_member.pubsub_agent_mints_push_tokens',
      'google_pubsub_topic_iam_member.pubsub_agent_publishes_dead_letters',
    ]) {
      expect(triggers).toContain(grant);
    }
    expect(resourceOf(tf, 'google_pubsub_subscription', 'push').depends_on).toEqual([
      '${time_sleep.push_grants_settle}',
    ]);
    const secrets = resourceOf(tf, 'time_sleep', 'secret_events_grant_settles');
    expect(secrets.create_duration).toBe('${var.iam_propagation_wait}');
    expect(JSON.stringify(secrets.triggers)).toContain(
      'google_pubsub_topic_iam_member.secretmanager_publishes_events',
    );
    expect(resourceOf(tf, 'google_secret_manager_secret', 'secret').depends_on).toEqual([
      '${time_sleep.secret_events_grant_settles}',
    ]);
  });
});

describe('topics', () => {
  it('every topic of pubsub.json is created under its own name', () => {
    const topic = resourceOf(tf, 'google_pubsub_topic', 'topic');
    expect(topic.for_each).toBe('${module.tables.topics}');
    expect(topic.name).toBe('${each.key}');
    expect(Object.keys(tables.topics).sort()).toEqual(Object.keys(loadPubSubTable().topics).sort());
  });

  it('every topic a function consumes, a job publishes to, or a subscription dead-letters to exists', () => {
    const created = new Set(Object.keys(tables.topics));
    const pubsub = loadPubSubTable();
    for (const [name, row] of functionRows)
      expect(created.has(row.topic), `${name} consumes ${row.topic}`).toBe(true);
    for (const [job, j] of Object.entries(loadScheduleTable().jobs))
      expect(created.has(j.topic), job).toBe(true);
    expect(created.has(pubsub.deadLetterTopic)).toBe(true);
  });

  it('dead letters can be inspected on the subscription pubsub.json names', () => {
    const inspect = instance(resourceOf(tf, 'google_pubsub_subscription', 'dead_letters_inspect'), '', null);
    expect(inspect.name).toBe('dead-letters-inspect');
    expect(inspect.topic).toEqual(topicRef(loadPubSubTable().deadLetterTopic));
    expect(nested(inspect, 'expiration_policy').ttl).toBe('');
    // The local plane's is the same (topology-plan.ts): the runbook's pull-then-ack is rehearsed as run.
    expect(inspect.ack_deadline_seconds).toBe(DEAD_LETTER_INSPECT_ACK_DEADLINE_SECONDS);
  });
});

describe('Cloud Scheduler', () => {
  it('the jobs equal the shared schedule table: name, cron, time zone, topic and the exact data', () => {
    const job = resourceOf(tf, 'google_cloud_scheduler_job', 'job');
    expect(job.for_each).toBe('${module.tables.schedules}');
    const table = loadScheduleTable();
    const deployed = Object.entries(tables.schedules).map(([key, value]) => instance(job, key, value));
    expect(deployed.map((d) => d.name).sort()).toEqual(Object.keys(table.jobs).sort());
    for (const d of deployed) {
      const row = table.jobs[d.name as string]!;
      expect(d).toMatchObject({ schedule: row.schedule, time_zone: table.timeZone });
      expect(d.region).toEqual({ address: 'var.region', attribute: '' });
      const target = nested(d, 'pubsub_target');
      expect(target.topic_name).toEqual(topicRef(row.topic));
      expect(JSON.parse(Buffer.from(target.data as string, 'base64').toString('utf8'))).toEqual(row.data);
    }
  });
});

describe('Secret Manager', () => {
  it('every secret notifies the topic the rotation function consumes', () => {
    const secrets = Object.entries(tf.resource.google_secret_manager_secret ?? {});
    expect(secrets.length).toBeGreaterThan(0);
    const consumedByFunctions = new Set(functionRows.map(([, row]) => row.topic));
    for (const [name, secret] of secrets) {
      const topics = secret.topics as Block[] | undefined;
      expect(topics?.length, `secret ${name} has no notification topic`).toBeGreaterThan(0);
      for (const t of topics ?? []) {
        const ref = evaluate(t.name, scope('', null)) as { address: string; key: string };
        expect(ref.address).toBe('google_pubsub_topic.topic');
        expect(consumedByFunctions.has(ref.key), `${ref.key} must be consumed by a function`).toBe(true);
        expect(loadPubSubTable().topics[ref.key]?.consumer).toBe('rotation');
      }
    }
  });
});

describe('APIs first', () => {
  /** The resources (and data sources) an expression names, through the locals it reads. */
  function referenced(value: unknown, seen = new Set<string>()): string[] {
    const text = JSON.stringify(value ?? '');
    const out = [...text.matchAll(/\b(data\.)?(google_\w+|archive_\w+)\.(\w+)/g)].map(
      (m) => `${m[1] ?? ''}${m[2]}.${m[3]}`,
    );
    for (const [, local] of text.matchAll(/\blocal\.(\w+)/g)) {
      if (seen.has(local!)) continue;
      seen.add(local!);
      out.push(...referenced(tf.locals[local!], seen));
    }
    return out;
  }

  const ENABLED = 'google_project_service.enabled';
  /** Whether creating it waits for the APIs: it depends on them, or on something that does. */
  function waitsForApis(address: string, path = new Set<string>()): boolean {
    if (address === ENABLED) return true;
    if (path.has(address)) return false;
    path.add(address);
    const [type, name] = address.replace(/^data\./, '').split('.');
    const block = (address.startsWith('data.') ? tf.data : tf.resource)[type!]?.[name!];
    return block !== undefined && referenced(block).some((r) => waitsForApis(r, path));
  }

  it('every resource waits for the enabled APIs: an apply that is the first to enable Compute must not race it', () => {
    const resources = Object.entries(tf.resource).flatMap(([type, byName]) =>
      Object.keys(byName).map((name) => `${type}.${name}`),
    );
    expect(resources.length).toBeGreaterThan(50);
    expect(resources.filter((r) => r !== ENABLED && !waitsForApis(r))).toEqual([]);
  });

  it('the check follows references and locals, and sees a resource that names neither', () => {
    expect(waitsForApis('google_compute_router.egress')).toBe(true); // through the network's depends_on
    expect(waitsForApis('google_cloud_run_v2_service_iam_member.crawler_invokes_gateway')).toBe(true);
    expect(waitsForApis('data.google_project.this')).toBe(false); // read at plan: only a project id
  });
});
