// biome-ignore-all lint/suspicious/noTemplateCurlyInString: Terraform expressions parse to "${…}" strings.
// What must never be deployed, read from the .tf files: a primitive role, an authoritative IAM resource,
// a proxy VM account with more than secret access, an open proxy firewall nobody asked for, a gateway
// that scales to zero. Plus the pieces an operator relies on: alerts and outputs.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { TTL_POLICIES } from '../../emulators/local-plane/ttl-sweeper.js';
import { SINGLE_THREADED_GC } from '../../functions/gateway/src/gc-threads.js';
import { Collections } from '../../shared/src/adapters/firestore/collections.js';
import { LEASE_COLLECTIONS, TTL_FIELD } from '../../shared/src/adapters/firestore/lease-collections.js';
import { RECLAIM_TTL_FIELD } from '../../shared/src/adapters/firestore/ownership-reclaim-store.js';
import { OUTCOME_TTL_FIELD } from '../../shared/src/adapters/firestore/worker-outcome-store.js';
import { NETWORK_TAG } from '../../shared/src/adapters/gce/labels.js';
import { loadFunctionTable } from '../../shared/src/config/topology.js';
import { type Block, loadModule, nested, resourceOf, stringsIn, type TfConfig } from './support/hcl.js';
import { tablesModuleDir, terraformDir } from './support/paths.js';

let tf: TfConfig;
let tables: TfConfig;
beforeAll(async () => {
  tf = await loadModule(terraformDir);
  tables = await loadModule(tablesModuleDir);
});

const PRIMITIVE = /\broles\/(owner|editor|viewer)\b/;
const quoted = (expression: string): string[] => [...expression.matchAll(/"([^"]*)"/g)].map((m) => m[1]!);
const allStrings = () => [...stringsIn(tf.files), ...stringsIn(tables.files)];

describe('IAM', () => {
  it('grants no owner / editor / viewer role anywhere', () => {
    const primitive = allStrings().filter((s) => PRIMITIVE.test(s.text));
    expect(primitive.map((s) => `${s.path.join('.')}: ${s.text}`)).toEqual([]);
  });

  it('uses only additive *_iam_member grants (no *_iam_policy / *_iam_binding that would wipe others)', () => {
    const authoritative = Object.keys(tf.resource).filter((t) => /_iam_(policy|binding)$/.test(t));
    expect(authoritative).toEqual([]);
  });

  it('every role a grant names is a predefined role or one of the custom roles, never a primitive one', () => {
    const roles = new Set<string>();
    for (const [type, byName] of Object.entries(tf.resource)) {
      if (!type.endsWith('_iam_member')) continue;
      for (const block of Object.values(byName)) roles.add(block.role as string);
    }
    // project_roles holds literal roles, custom-role references, or a conditional over literal roles.
    const fromLocals = [...stringsIn(tf.locals.project_roles)].flatMap((s) =>
      s.text.startsWith('${local.custom_roles.') ? [] : s.text.startsWith('${') ? quoted(s.text) : [s.text],
    );
    expect(roles).toEqual(
      new Set([
        '${each.value.role}',
        'roles/artifactregistry.reader', // the CONNECT gateway VMs' image pull (gateway_connect.tf)
        'roles/pubsub.publisher',
        'roles/pubsub.subscriber',
        'roles/run.invoker',
        'roles/secretmanager.secretAccessor',
        'roles/secretmanager.viewer',
        'roles/iam.serviceAccountUser',
        'roles/iam.serviceAccountTokenCreator',
      ]),
    );
    for (const role of fromLocals) {
      expect(role).toMatch(/^roles\/[a-zA-Z0-9.]+$/);
      expect(role).not.toMatch(PRIMITIVE);
    }
  });

  it('gives every function of functions.json its own account and a deliberate set of project roles', () => {
    const projectRoles = tf.locals.project_roles as Record<string, unknown>;
    for (const name of Object.keys(loadFunctionTable().functions)) {
      expect(Object.keys(projectRoles), `fn-${name} has no entry in local.project_roles`).toContain(
        `fn-${name}`,
      );
    }
    expect(resourceOf(tf, 'google_service_account', 'function').for_each).toBe('${module.tables.functions}');
    const accounts = Object.keys(tf.resource.google_service_account ?? {});
    expect(accounts.sort()).toEqual(['api', 'builder', 'function', 'gateway', 'proxy_vm', 'pubsub_push']);
  });

  it('the proxy VM account gets Secret Manager access to proxy credentials and nothing else', () => {
    const uses = allStrings().filter((s) => s.text.includes('google_service_account.proxy_vm.member'));
    expect(uses.map((s) => s.path.slice(3).join('.'))).toEqual(['secret_readers.proxy-credentials.proxy-vm']);
    const reader = resourceOf(tf, 'google_secret_manager_secret_iam_member', 'reader');
    expect(reader).toMatchObject({
      role: 'roles/secretmanager.secretAccessor',
      for_each: '${local.secret_grants}',
    });
    expect(Object.keys(tf.locals.project_roles as object)).not.toContain('proxy-vm');
    expect(Object.keys(tf.locals.members as object)).not.toContain('proxy-vm');
  });

  it('grants Secret Manager roles only on single secrets, never project-wide', () => {
    // code-contract.test.ts checks who gets which of the two roles on which kind of secret.
    const secretRoles = Object.entries(tf.resource).flatMap(([type, byName]) =>
      Object.values(byName)
        .filter((b) => String(b.role).startsWith('roles/secretmanager.'))
        .map((b) => `${type} ${String(b.role)}`),
    );
    expect(secretRoles.sort()).toEqual([
      'google_secret_manager_secret_iam_member roles/secretmanager.secretAccessor',
      'google_secret_manager_secret_iam_member roles/secretmanager.viewer',
    ]);
    const projectWide = [...stringsIn(tf.locals.project_roles)].filter((s) =>
      s.text.includes('secretmanager'),
    );
    expect(projectWide).toEqual([]);
  });
});

describe('the proxy firewall', () => {
  const firewall = () => resourceOf(tf, 'google_compute_firewall', 'proxy_port');

  it('opens the proxy port only, on the proxy VMs only', () => {
    const fw = firewall();
    expect(fw).toMatchObject({ direction: 'INGRESS', target_tags: ['${local.proxy_network_tag}'] });
    expect(fw.allow).toEqual([{ protocol: 'tcp', ports: ['${tostring(var.proxy_port)}'] }]);
    expect(fw.deny).toBeUndefined();
    // The tag is the code's (every instance gets it), not configuration; code-contract.test.ts checks
    // the network and account reconcile reads and the port a spec defaults to.
    expect(tf.locals.proxy_network_tag).toBe(NETWORK_TAG);
    expect(fw.network).toBe('${google_compute_network.plane.id}');
  });

  it('admits the gateway and probe egress (static NAT) and the crawler CIDRs variable', () => {
    expect(firewall().source_ranges).toBe('${local.proxy_firewall_sources}');
    const sources = tf.locals.proxy_firewall_sources as string;
    expect(sources).toContain('google_compute_address.nat');
    expect(sources).toContain('var.crawler_cidrs');
    const nat = resourceOf(tf, 'google_compute_router_nat', 'egress');
    expect(nat.nat_ip_allocate_option).toBe('MANUAL_ONLY');
    const natted = (nat.subnetwork as Block[]).map((s) => s.name);
    expect(natted).toEqual([
      '${google_compute_subnetwork.gateway_egress.id}',
      '${google_compute_subnetwork.probe_connector.id}',
    ]);
  });

  it('has no 0.0.0.0/0 anywhere unless allow_open_proxy_firewall (default false) says so', () => {
    const open = allStrings().filter(
      (s) => s.text.includes('0.0.0.0/0') && !['description', 'error_message'].includes(s.path.at(-1) ?? ''),
    );
    expect(open.length).toBeGreaterThan(0);
    for (const s of open) {
      expect(s.text.replace(/\s+/g, ' ')).toMatch(
        /var\.allow_open_proxy_firewall \? \["0\.0\.0\.0\/0"\] : \[\]/,
      );
      expect(s.text.match(/0\.0\.0\.0\/0/g)).toHaveLength(1);
    }
    expect(tf.variable.allow_open_proxy_firewall).toMatchObject({ type: '${bool}', default: false });
  });
});

describe('Cloud Run', () => {
  it('the gateway keeps at least one warm instance with CPU always allocated', () => {
    const gateway = nested(resourceOf(tf, 'google_cloud_run_v2_service', 'gateway'), 'template');
    expect(nested(gateway, 'scaling').min_instance_count).toBe('${var.gateway_min_instances}');
    const minVar = tf.variable.gateway_min_instances!;
    expect(minVar.default as number).toBeGreaterThanOrEqual(1);
    expect(JSON.stringify(minVar.validation)).toContain('var.gateway_min_instances >= 1');
    expect(nested(gateway, 'containers', 'resources').cpu_idle).toBe(false);
    expect(nested(gateway, 'vpc_access').egress).toBe('ALL_TRAFFIC');
  });

  // Leases and discovery decide on Firestore listeners' views (catalog, cooldowns, ownership): with CPU only
  // inside requests they stall between them, and the first acquire after a quiet spell decided on a stale view.
  it('the API has CPU always allocated: its listeners run between requests', () => {
    const api = nested(resourceOf(tf, 'google_cloud_run_v2_service', 'api'), 'template');
    expect(nested(api, 'containers', 'resources').cpu_idle).toBe(false);
  });

  it("the gateway runs the image's command with V8's single-threaded GC unless gateway_gc_threads says parallel", () => {
    const container = nested(
      resourceOf(tf, 'google_cloud_run_v2_service', 'gateway'),
      'template',
      'containers',
    );
    expect(container.args).toBe('${local.gateway_args}');
    expect(tf.variable.gateway_gc_threads).toMatchObject({ default: 'single' });
    // The image's command is `node .` (terraform/images/Dockerfile): only the flag is added.
    const dockerfile = readFileSync(join(terraformDir, 'images/Dockerfile'), 'utf8');
    expect(dockerfile).toMatch(/^CMD \["node", "\."\]$/m);
    expect(tf.locals.gateway_args).toBe(
      `\${var.gateway_gc_threads == "single" ? ["node", "${SINGLE_THREADED_GC}", "."] : ["node", "."]}`,
    );
  });

  it('the gateway serves only HTTP on Cloud Run and takes its client users from Secret Manager', () => {
    const container = nested(
      resourceOf(tf, 'google_cloud_run_v2_service', 'gateway'),
      'template',
      'containers',
    );
    const envBlocks = (container.dynamic as Record<string, Block[]>).env!;
    expect(envBlocks[0]!.for_each).toBe('${merge(local.runtime_env, local.gateway_env)}');
    expect((tf.locals.gateway_env as Record<string, string>).GATEWAY_PROXY_PORT).toBe('off');
    expect(tf.locals.gateway_secret_env).toEqual({ GATEWAY_CLIENT_USERS: 'gateway-clients' });
    const fromSecret = nested(envBlocks[1]!, 'content');
    expect(fromSecret.name).toBe('${env.key}');
    expect(nested(fromSecret, 'value_source', 'secret_key_ref').secret).toBe(
      '${google_secret_manager_secret.secret[env.value].secret_id}',
    );
    expect(container.env).toBeUndefined(); // no literal env values beside the two dynamic blocks
  });

  it('the API gets its tokens from Secret Manager only, and accepts identity tokens for its own URL', () => {
    const api = resourceOf(tf, 'google_cloud_run_v2_service', 'api');
    const container = nested(api, 'template', 'containers');
    const [plain, secret] = (container.dynamic as Record<string, Block[]>).env!;
    expect(plain!.for_each).toBe('${merge(local.runtime_env, local.api_env)}');
    const apiEnv = tf.locals.api_env as Record<string, string>;
    const plainNames = Object.keys(apiEnv);
    for (const name of ['ADMIN_EMAILS', 'ADMIN_AUDIENCES', 'GATEWAY_SERVICE_ACCOUNT'])
      expect(plainNames).toContain(name);
    for (const name of ['DISCOVERY_TOKENS', 'ADMIN_TOKENS']) expect(plainNames).not.toContain(name);
    expect(tf.locals.api_secret_env).toEqual({
      DISCOVERY_TOKENS: 'discovery-tokens',
      ADMIN_TOKENS: 'admin-tokens',
    });
    expect(nested(secret!, 'content', 'value_source', 'secret_key_ref').secret).toBe(
      '${google_secret_manager_secret.secret[env.value].secret_id}',
    );
    expect(apiEnv.ADMIN_AUDIENCES).toContain('local.api_url');
    expect(tf.locals.api_url).toBe(
      `https://${api.name}-\${data.google_project.this.number}.\${var.region}.run.app`,
    );
  });

  it('the API has public ingress and authenticates callers itself', () => {
    const api = resourceOf(tf, 'google_cloud_run_v2_service', 'api');
    expect(api).toMatchObject({ ingress: 'INGRESS_TRAFFIC_ALL', invoker_iam_disabled: true });
  });
});

describe('Firestore', () => {
  const resolveFields = (local: string) => {
    const names = tf.locals.collections as Record<string, string>;
    return Object.values(tf.locals[local] as Record<string, { collection: string; field: string }>)
      .map((t) => {
        const ref = /^\$\{local\.collections\.(\w+)\}$/.exec(t.collection);
        return `${ref ? names[ref[1]!] : t.collection}.${t.field}`;
      })
      .sort();
  };

  it('names the collections the code names, and puts a TTL policy on every collection whose documents expire', () => {
    expect(Object.values(tf.locals.collections as Record<string, string>).sort()).toEqual(
      Object.values(Collections).sort(),
    );
    // The lease service's collections, the gateway outcome batches and the pool reclaims: the fields the
    // adapters write as Timestamps.
    expect(resolveFields('ttl_fields')).toEqual(
      [
        ...Object.values(LEASE_COLLECTIONS).map((c) => `${c}.${TTL_FIELD}`),
        `${Collections.workerOutcomes}.${OUTCOME_TTL_FIELD}`,
        `${Collections.reclaims}.${RECLAIM_TTL_FIELD}`,
      ].sort(),
    );
    // The local plane runs the same policies (the Firestore emulator has no TTL).
    expect(TTL_POLICIES.map((t) => `${t.collection}.${t.field}`).sort()).toEqual(resolveFields('ttl_fields'));
    // A TTL field has no index (an empty index_config block): an expiry time only grows, and an indexed
    // one holds its collection to 500 writes a second; no query reads it.
    expect(resourceOf(tf, 'google_firestore_field', 'ttl').index_config).toEqual([{}]);
    const ttlFields = new Set(resolveFields('ttl_fields').map((f) => f.split('.')[1]));
    for (const q of adapterQueryFields()) expect(ttlFields.has(q.split('.')[0]!), q).toBe(false);
    expect(resourceOf(tf, 'google_firestore_database', 'default')).toMatchObject({
      name: '(default)',
      type: 'FIRESTORE_NATIVE',
    });
  });

  it('exempts the large per-proxy maps and lists, which no query reads, from single-field indexing', () => {
    expect(resolveFields('index_exemptions')).toEqual(
      [
        `${Collections.workers}.report`,
        `${Collections.snapshots}.routing`,
        `${Collections.snapshots}.draining`,
        'parts.proxies',
        `${Collections.ownership}.proxies`,
        `${Collections.workerOutcomes}.proxies`,
        `${Collections.health}.latencyHistory`,
        `${Collections.cursors}.tracked`,
        // Up to a proxy's capacity (1,000) lease entries, rewritten at every grant and release: an index
        // entry each for a field only ever read by document id.
        `${Collections.leaseState}.entries`,
        // Timestamps that only grow, written at every grant, release or renewal, never queried: indexed,
        // each holds its collection to 500 writes a second (leases.endsAt is queried: it stays).
        `${Collections.leases}.grantedAt`,
        `${Collections.leases}.expiresAt`,
        `${Collections.leases}.releasedAt`,
        `${Collections.leaseState}.updatedAt`,
        `${Collections.leaseKeys}.createdAt`,
        `${Collections.cooldowns}.reportedAt`,
      ].sort(),
    );
    const exempt = resourceOf(tf, 'google_firestore_field', 'no_index');
    expect(exempt.for_each).toBe('${local.index_exemptions}');
    // An empty index_config block: no index on the field at all.
    expect(exempt.index_config).toEqual([{}]);
    // No query filters or orders on an exempted field (the code's queries, read from the adapters).
    const exemptedFields = new Set(resolveFields('index_exemptions').map((f) => f.split('.')[1]));
    for (const q of adapterQueryFields()) expect(exemptedFields.has(q.split('.')[0]!), q).toBe(false);
  });
});

/** The exclusion's URL clause: the full echo URL on any host (Cloud Run logs the full URL). */
const ECHO_URL_CLAUSE = 'httpRequest.requestUrl=~"^https?://[^/?#]+/v1/echo$"';

/** What a Cloud Logging clause on httpRequest.requestUrl matches: `:` (case-insensitive substring) or `=~` (RE2). */
function requestUrlMatcher(clause: string): (url: string) => boolean {
  const m = /^httpRequest\.requestUrl(:|=~)"(.*)"$/.exec(clause);
  if (!m) throw new Error(`not a requestUrl clause: ${clause}`);
  const [, op, value] = m as unknown as [string, string, string];
  if (op === ':') return (url) => url.toLowerCase().includes(value.toLowerCase());
  const re = new RegExp(value);
  return (url) => re.test(url);
}

describe('operations', () => {
  it("keeps Cloud Run's request logs of the EGRESS echo's successes out of Cloud Logging, and nothing else", () => {
    // 2N a minute (86 M a month at 1,000 proxies): with the probe's own lines they passed the free 50 GiB
    // (docs/cost.md § Logging). The probe logs each EGRESS result; a failed echo is still logged.
    const exclusions = tf.resource.google_logging_project_exclusion ?? {};
    expect(Object.keys(exclusions)).toEqual(['echo_requests']);
    const filter = String(resourceOf(tf, 'google_logging_project_exclusion', 'echo_requests').filter);
    expect(filter.split(' AND ')).toEqual([
      'resource.type="cloud_run_revision"',
      'resource.labels.service_name="${google_cloud_run_v2_service.api.name}"',
      'log_id("run.googleapis.com/requests")',
      ECHO_URL_CLAUSE,
      'httpRequest.status<400',
    ]);
  });

  it("excludes the echo's request logs by their whole URL, not every URL that mentions /v1/echo", () => {
    // Cloud Run's requestUrl is the full URL. `:` is Cloud Logging's substring match: it also excluded any
    // successful request whose URL merely contains "/v1/echo" — the fleet page, /metrics or /healthz (which
    // read any query) asked with `?x=/v1/echo`, or another path that starts with it.
    const filter = String(resourceOf(tf, 'google_logging_project_exclusion', 'echo_requests').filter);
    const clause = filter.split(' AND ').find((c) => c.startsWith('httpRequest.requestUrl'))!;
    const excluded = requestUrlMatcher(clause);
    expect(excluded('https://api-abc-uc.a.run.app/v1/echo')).toBe(true);
    for (const other of [
      'https://api-abc-uc.a.run.app/fleet?from=/v1/echo',
      'https://api-abc-uc.a.run.app/metrics?/v1/echo',
      'https://api-abc-uc.a.run.app/v1/echoes',
      'https://api-abc-uc.a.run.app/healthz?u=https://x/v1/echo',
    ])
      expect(excluded(other), other).toBe(false);
  });

  it('alerts on Failed proxies, proxies without readable credentials, quota, instances that do not finish booting, GC deletions, failing and stopped jobs, dead letters, worker snapshot age, suspect workers, routes failing open, the API not answering, the lease store and its credentials, gateway traffic and a probe out of time or credentials', () => {
    const policies = Object.keys(tf.resource.google_monitoring_alert_policy ?? {}).sort();
    expect(policies).toEqual([
      'api_not_answering',
      'cloud_init_errors',
      'dead_letters',
      'drift_polls_failed',
      'failing_jobs',
      'gateway_no_upstream',
      'gateway_outcome_drops',
      'gateway_suspect_fallbacks',
      'gc_deletions',
      'lease_credentials_unreadable',
      'lease_store_unavailable',
      'probe_credentials_unavailable',
      'probe_out_of_time',
      'proxies_failed',
      'quota_exceeded',
      'routes_failed_open',
      'slow_boots',
      'stale_gateway',
      'stopped_jobs',
      'suspect_workers',
    ]);
    const counters = tf.locals.log_counters as Record<string, { event: string }>;
    expect(Object.fromEntries(Object.entries(counters).map(([k, v]) => [k, v.event]))).toEqual({
      proxies_failed: 'proxy.failed',
      cloud_init_errors: 'proxy.cloud_init_error',
      quota_exceeded: 'provider.quota_exceeded',
      slow_boots: 'proxy.boot_slow',
      routes_failed_open: 'gateway.route_failed_open',
      gc_deletions: 'gc.deleted',
      suspect_workers: 'passive.worker_suspect',
      provider_requests: 'provider.request',
      probe_results: 'probe.result',
      lease_store_unavailable: 'leases.store_unavailable',
      lease_credentials_unreadable: 'leases.credentials_unreadable',
      tick_failures: 'job.tick_failed',
      ticks: 'job.tick',
      probe_budget_spent: 'probe.pass_budget_spent',
      probe_credentials_unavailable: 'probe.credentials_unavailable',
      drift_polls_failed: 'reconcile.drift_poll_failed',
    });
    // The gateway.traffic fields the gateway traffic alerts divide (by `requests`).
    expect(
      Object.fromEntries(
        Object.entries(tf.locals.gateway_traffic as Record<string, { field: string }>).map(([k, v]) => [
          k,
          v.field,
        ]),
      ),
    ).toEqual({
      requests: 'jsonPayload.requests',
      no_upstream: 'jsonPayload.outcomes.noUpstream',
      outcome_drops: 'jsonPayload.outcomeQueueDrops',
      suspect_fallbacks: 'jsonPayload.suspectFallbacks',
    });
    const deadLetters = JSON.stringify(resourceOf(tf, 'google_monitoring_alert_policy', 'dead_letters'));
    expect(deadLetters).toContain('google_pubsub_subscription.dead_letters_inspect.name');
  });

  it('gives a function more CPU only where function_cpu names it (the probe is CPU-bound past a few thousand proxies), and refuses a name the table lacks', () => {
    const fn = resourceOf(tf, 'google_cloudfunctions2_function', 'fn');
    // Always a value: the provider keeps one it is no longer sent, so a function taken out of function_cpu
    // would stay at its raised CPU. Its default is Cloud Functions' share for each memory the table uses.
    expect(nested(fn, 'service_config').available_cpu).toBe(
      '${lookup(var.function_cpu, each.key, lookup(local.default_function_cpu, each.value.available_memory, null))}',
    );
    const shares = tf.locals.default_function_cpu as Record<string, string>;
    for (const f of Object.values(loadFunctionTable().functions))
      expect(shares, f.memory).toHaveProperty(f.memory);
    expect(shares['512Mi']).toBe('0.333');
    expect(tf.variable.function_cpu!.default).toEqual({});
    expect(JSON.stringify(nested(fn, 'lifecycle'))).toContain(
      'contains(keys(module.tables.functions), name)',
    );
  });

  it("checks the API from outside: an uptime check on its deterministic URL's /v1/echo, read by its alert", () => {
    // An API that is down logs nothing: no log-based alert can see it. Not /healthz: Cloud Run's front end
    // answers paths ending in "z" on run.app itself (404). The echo needs no credential, and the echo
    // exclusion keeps the checks' successful requests out of the logs.
    const check = resourceOf(tf, 'google_monitoring_uptime_check_config', 'api');
    expect(nested(check, 'http_check')).toMatchObject({ path: '/v1/echo', port: 443, use_ssl: true });
    expect(String(nested(check, 'http_check').path)).not.toMatch(/z$/);
    const exclusion = String(resourceOf(tf, 'google_logging_project_exclusion', 'echo_requests').filter);
    expect(exclusion).toContain('/v1/echo$');
    expect(nested(check, 'monitored_resource')).toMatchObject({
      type: 'uptime_url',
      labels: { host: '${trimprefix(local.api_url, "https://")}' },
    });
    const alert = JSON.stringify(resourceOf(tf, 'google_monitoring_alert_policy', 'api_not_answering'));
    expect(alert).toContain('uptime_check/check_passed');
    expect(alert).toContain('google_monitoring_uptime_check_config.api.uptime_check_id');
  });

  it('every variable has a description; outputs give the API URL, the gateway URL and the service accounts', () => {
    for (const [name, v] of Object.entries(tf.variable)) {
      expect((v.description as string | undefined)?.length ?? 0, `variable ${name}`).toBeGreaterThan(20);
    }
    expect(Object.keys(tf.output)).toEqual(
      expect.arrayContaining(['api_url', 'gateway_url', 'service_accounts']),
    );
    // The deterministic URL: the audience the API accepts (code-contract.test.ts), not the hashed uri.
    expect(tf.output.api_url!.value).toBe('${local.api_url}');
    expect(tf.output.gateway_url!.value).toBe('${google_cloud_run_v2_service.gateway.uri}');
  });
});

/** The field paths the Firestore adapters filter or order on (`.where('a.b', …)`, `.orderBy('a')`). */
function adapterQueryFields(): string[] {
  const dir = fileURLToPath(new URL('../../shared/src/adapters/firestore/', import.meta.url));
  const fields = readdirSync(dir)
    .filter((f) => f.endsWith('.ts') && !f.includes('.test.'))
    .flatMap((f) => [...readFileSync(join(dir, f), 'utf8').matchAll(/\.(?:where|orderBy)\(\s*'([^']+)'/g)])
    .map((m) => m[1]!);
  if (fields.length === 0)
    throw new Error('no adapter queries found: the pattern no longer matches the code');
  return fields;
}
