// biome-ignore-all lint/suspicious/noTemplateCurlyInString: Terraform expressions parse to "${…}" strings.
// terraform/gateway_connect.tf, the opt-in CONNECT listener of the gateway on VMs behind a passthrough
// load balancer, read from the .tf files: it exists only when switched on (and then touches nothing else
// but its NAT subnet, its firewall sources and its IAM), it runs the repo's startup script as pp-gateway
// with no secret value in its metadata, its load balancer and firewall use the port that script starts the
// container on, its client firewall admits exactly the operator's CIDRs, and the proxy firewall admits the
// VMs without anyone editing crawler_cidrs.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { GatewayEnv, loadGatewayConfig } from '../../functions/gateway/src/config.js';
import { HOST_ACCESS_METADATA } from '../../shared/src/adapters/gce/build-insert-request.js';
import { type Block, loadModule, nested, resourceOf, stringsIn, type TfConfig } from './support/hcl.js';
import { repoRoot, terraformDir } from './support/paths.js';

let tf: TfConfig;
beforeAll(async () => {
  tf = await loadModule(terraformDir);
});

const FILE = 'gateway_connect.tf';
const SCRIPT = 'scripts/gateway-connect-startup.sh';
const SWITCH = '${local.gateway_connect_enabled ? 1 : 0}';
const script = () => readFileSync(join(terraformDir, SCRIPT), 'utf8');
const own = () => tf.files[FILE] as Record<string, Record<string, Record<string, Block[]>>>;
const res = (type: string, name: string) => resourceOf(tf, type, name);
const locals = () => tf.locals as Record<string, unknown>;
const metadata = () => locals().gateway_connect_metadata as Record<string, string>;

/** Every resource and data block of gateway_connect.tf, as "type.name". */
function ownBlocks(): [string, Block][] {
  const out: [string, Block][] = [];
  for (const kind of ['resource', 'data'] as const)
    for (const [type, byName] of Object.entries(own()[kind] ?? {}))
      for (const [name, blocks] of Object.entries(byName)) out.push([`${type}.${name}`, blocks[0]!]);
  return out;
}

describe('off by default: an existing deployment plans no change', () => {
  it('every resource and data source of gateway_connect.tf is counted on the one switch, false by default', () => {
    const blocks = ownBlocks();
    expect(blocks.length).toBeGreaterThanOrEqual(12);
    for (const [address, block] of blocks) {
      expect(block.count, `${address} must be counted on the switch`).toBe(SWITCH);
      expect(block.for_each, address).toBeUndefined();
    }
    expect(locals().gateway_connect_enabled).toBe('${var.gateway_connect_enabled}');
    expect(tf.variable.gateway_connect_enabled).toMatchObject({ type: '${bool}', default: false });
    // Nothing of it lives elsewhere: every gateway VM resource is in gateway_connect.tf.
    for (const [file, parsed] of Object.entries(tf.files)) {
      if (file === FILE) continue;
      const elsewhere = Object.entries((parsed.resource ?? {}) as Record<string, Record<string, unknown>>)
        .flatMap(([type, byName]) => Object.keys(byName).map((name) => `${type}.${name}`))
        .filter((a) => a.includes('gateway_connect'));
      expect(elsewhere, file).toEqual([]);
    }
  });

  it('other files reach it only through forms that are empty or null while it is off', () => {
    // A `for` or a dynamic block over a counted resource (no instances: nothing), or a conditional on the
    // switch whose other branch is [] or null. Anything else (say `…gateway_connect[0].ip_cidr_range` in
    // network.tf) would fail the plan, or change something, in every deployment that has it off.
    const emptyWhenOff = [
      /\[for \w+ in google_\w+\.gateway_connect : [^\]]*\]/g,
      /^\$\{google_\w+\.gateway_connect\}$/g,
      /local\.gateway_connect_enabled \? \[[^\]]*\] : \[\]/g,
      /^\$\{local\.gateway_connect_enabled \? .* : null\}$/gs,
    ];
    const uses: string[] = [];
    for (const [file, parsed] of Object.entries(tf.files)) {
      if (file === FILE) continue;
      for (const s of stringsIn(parsed)) {
        const where = `${file}: ${s.path.join('.')}`;
        // Prose (descriptions, validation messages) and the variables' own validations name them freely.
        if (['description', 'error_message'].includes(s.path.at(-1) ?? '') || s.path[0] === 'variable')
          continue;
        if (!s.text.includes('gateway_connect')) continue;
        uses.push(where);
        const rest = emptyWhenOff.reduce((text, re) => text.replace(re, ''), s.text);
        expect(rest, where).not.toContain('gateway_connect');
      }
    }
    // The NAT subnet, the proxy firewall's sources, the VMs' project roles and the two outputs.
    expect(uses.sort()).toEqual(
      [
        'iam.tf: locals.0.project_roles.gateway',
        'monitoring.tf: resource.google_monitoring_alert_policy.stale_gateway.0.dynamic.conditions.0.for_each',
        'network.tf: locals.0.proxy_firewall_sources',
        'network.tf: resource.google_compute_router_nat.egress.0.dynamic.subnetwork.0.for_each',
        'outputs.tf: output.gateway_connect_instance_group.0.value',
        'outputs.tf: output.gateway_connect_proxy.0.value',
      ].sort(),
    );
  });
});

describe('an operator hears of CONNECT gateway VMs that never serve', () => {
  it("the stale-gateway alert has a condition of the VMs' own: no snapshot-age line from a Compute Engine instance", () => {
    // The merged condition stays present on the Cloud Run gateway's lines while every VM is down.
    const dynamic = nested(res('google_monitoring_alert_policy', 'stale_gateway'), 'dynamic', 'conditions');
    expect(dynamic.for_each).toBe('${local.gateway_connect_enabled ? ["gce_instance"] : []}');
    const absent = nested(dynamic, 'content', 'condition_absent');
    expect(String(absent.filter)).toBe(
      'metric.type="logging.googleapis.com/user/${google_logging_metric.worker_snapshot_age.name}" AND resource.type="${conditions.value}"',
    );
    expect(absent.duration).toBe('300s');
  });
});

describe('the proxy VMs accept the gateway VMs without anyone editing crawler_cidrs', () => {
  it('the gateway VMs have no external address and sit in their own subnet', () => {
    const template = res('google_compute_instance_template', 'gateway_connect');
    const nic = nested(template, 'network_interface');
    expect(nic.subnetwork).toBe('${google_compute_subnetwork.gateway_connect[0].id}');
    // An access_config would give each VM an ephemeral address of its own, which no firewall names.
    expect(nic.access_config).toBeUndefined();
    expect(res('google_compute_subnetwork', 'gateway_connect')).toMatchObject({
      network: '${google_compute_network.plane.id}',
      region: '${var.region}',
      ip_cidr_range: '${var.gateway_connect_subnet_cidr}',
    });
  });

  it('Cloud NAT serves that subnet, so they reach proxies from the static addresses the proxy firewall admits', () => {
    const nat = res('google_compute_router_nat', 'egress');
    const dynamicSubnet = nested(nat, 'dynamic', 'subnetwork');
    expect(dynamicSubnet.for_each).toBe('${google_compute_subnetwork.gateway_connect}');
    expect(nested(dynamicSubnet, 'content')).toEqual({
      name: '${subnetwork.value.id}',
      source_ip_ranges_to_nat: ['ALL_IP_RANGES'],
    });
    expect(nat.nat_ips).toBe('${google_compute_address.nat[*].self_link}');
    const sources = String(locals().proxy_firewall_sources);
    expect(sources).toContain('[for a in google_compute_address.nat : "${a.address}/32"]');
    // …and the subnet itself, for a path that stays inside the VPC (a proxy addressed by internal IP).
    expect(sources).toContain('[for s in google_compute_subnetwork.gateway_connect : s.ip_cidr_range]');
    expect(res('google_compute_firewall', 'proxy_port').source_ranges).toBe(
      '${local.proxy_firewall_sources}',
    );
  });
});

describe('the CONNECT port: the one the startup script starts the container with', () => {
  it('Terraform reads it from the script, and the script starts the gateway listening on it', () => {
    expect(locals().gateway_connect_script).toBe(`\${file("\${path.module}/${SCRIPT}")}`);
    const expression = String(locals().gateway_connect_port);
    const pattern = /^\$\{tonumber\(regex\("([^"]+)", local\.gateway_connect_script\)\[0\]\)\}$/.exec(
      expression,
    );
    expect(pattern, expression).not.toBeNull();
    // Terraform's regex() on the script, as RE2 would run it (the pattern is plain enough for both).
    const matches = [...script().matchAll(new RegExp(pattern![1]!, 'g'))];
    expect(matches).toHaveLength(1);
    const port = Number(matches[0]![1]);
    // What the gateway makes of the script's `-e GATEWAY_PROXY_PORT=…` (code-contract.test.ts starts the
    // gateway's config loader on the script's whole env).
    const given = [...script().matchAll(/-e GATEWAY_PROXY_PORT=(\S+)/g)].map((m) => m[1]!);
    expect(given).toHaveLength(1);
    const config = loadGatewayConfig([], { GATEWAY_PROXY_PORT: given[0]!, GATEWAY_CLIENT_USERS: 'u:p' });
    expect(config.GATEWAY_PROXY_PORT).toBe(port);
    // COS's host firewall, which the script opens, lets it in.
    const accepted = /--dports ([\d,]+) -j ACCEPT/.exec(script())![1]!.split(',').map(Number);
    expect(accepted).toContain(port);
  });

  it('the forwarding rule and the client firewall open exactly that port', () => {
    const port = '${tostring(local.gateway_connect_port)}';
    const rule = res('google_compute_forwarding_rule', 'gateway_connect');
    expect(rule.ports).toEqual([port]);
    expect(rule.port_range).toBeUndefined();
    expect(res('google_compute_firewall', 'gateway_connect_clients').allow).toEqual([
      { protocol: 'tcp', ports: [port] },
    ]);
    expect(tf.output.gateway_connect_proxy!.value).toBe(
      '${local.gateway_connect_enabled ? "${google_compute_address.gateway_connect[0].address}:${local.gateway_connect_port}" : null}',
    );
  });

  it("the health checks probe the gateway's HTTP port, which the script leaves at the gateway's default and opens", () => {
    const http = locals().gateway_connect_http_port;
    expect(http).toBe(GatewayEnv.parse({}).PORT);
    expect(script()).not.toMatch(/-e PORT=/);
    const accepted = /--dports ([\d,]+) -j ACCEPT/.exec(script())![1]!.split(',').map(Number);
    expect(accepted).toContain(http);
    const check = (name: string) =>
      nested(res('google_compute_region_health_check', name), 'http_health_check');
    expect(check('gateway_connect_alive')).toEqual({
      port: '${local.gateway_connect_http_port}',
      request_path: '/healthz',
    });
    expect(check('gateway_connect_ready')).toEqual({
      port: '${local.gateway_connect_http_port}',
      request_path: '/readyz',
    });
  });
});

describe('firewall: the CONNECT port from the operator’s CIDRs only, the HTTP port from Google’s health checks only', () => {
  const gatewayRules = () =>
    Object.entries(tf.resource.google_compute_firewall ?? {}).filter(([, fw]) =>
      JSON.stringify(fw.target_tags ?? '').includes('gateway_connect'),
    );

  it('exactly two rules target the gateway VMs, and only the gateway VMs carry their tag', () => {
    expect(
      gatewayRules()
        .map(([name]) => name)
        .sort(),
    ).toEqual(['gateway_connect_clients', 'gateway_connect_health']);
    for (const [, fw] of gatewayRules()) {
      expect(fw).toMatchObject({
        direction: 'INGRESS',
        network: '${google_compute_network.plane.id}',
        target_tags: ['${local.gateway_connect_tag}'],
      });
      expect(fw.source_tags).toBeUndefined();
      expect(fw.deny).toBeUndefined();
    }
    expect(res('google_compute_instance_template', 'gateway_connect').tags).toEqual([
      '${local.gateway_connect_tag}',
    ]);
    const tagged = [...stringsIn(tf.files)].filter((s) => s.text.includes('local.gateway_connect_tag'));
    expect(tagged.map((s) => s.path.slice(2, 4).join('.')).sort()).toEqual([
      'google_compute_firewall.gateway_connect_clients',
      'google_compute_firewall.gateway_connect_health',
      'google_compute_instance_template.gateway_connect',
    ]);
    // Not the proxies' tag: the proxy port stays closed to whatever reaches the gateway VMs.
    expect(locals().gateway_connect_tag).not.toBe(locals().proxy_network_tag);
  });

  it('the CONNECT port admits the client CIDRs variable and nothing else', () => {
    const clients = res('google_compute_firewall', 'gateway_connect_clients');
    expect(clients.source_ranges).toBe('${var.gateway_connect_client_cidrs}');
    const v = tf.variable.gateway_connect_client_cidrs!;
    expect(v.default).toEqual([]);
    const validations = JSON.stringify(v.validation);
    expect(validations).toContain('!endswith(c, \\"/0\\")');
    expect(validations).toContain(
      '!var.gateway_connect_enabled || length(var.gateway_connect_client_cidrs) > 0',
    );
  });

  it("the HTTP port admits Google's health-check ranges, and only the health-check port", () => {
    const health = res('google_compute_firewall', 'gateway_connect_health');
    expect(health.allow).toEqual([
      { protocol: 'tcp', ports: ['${tostring(local.gateway_connect_http_port)}'] },
    ]);
    expect(health.source_ranges).toBe('${local.google_health_check_ranges}');
    // https://cloud.google.com/load-balancing/docs/health-check-concepts#ip-ranges: the passthrough
    // load balancer's probes (35.191/16, 209.85.152/22, 209.85.204/22) and autohealing's (35.191/16,
    // 130.211/22). Nothing wider.
    expect([...(locals().google_health_check_ranges as string[])].sort()).toEqual(
      ['35.191.0.0/16', '130.211.0.0/22', '209.85.152.0/22', '209.85.204.0/22'].sort(),
    );
  });
});

describe('the VMs: the repo’s startup script, as pp-gateway, with names in the metadata and no secret', () => {
  it('the template boots Container-Optimized OS with the startup script file and the gateway image Cloud Run runs', () => {
    const template = res('google_compute_instance_template', 'gateway_connect');
    expect(template.metadata).toBe('${local.gateway_connect_metadata}');
    expect(nested(template, 'disk').source_image).toMatch(/^cos-cloud\/cos-/);
    expect(metadata()['startup-script']).toBe('${local.gateway_connect_script}');
    expect(locals().gateway_connect_script).toBe(`\${file("\${path.module}/${SCRIPT}")}`);
    const cloudRun = nested(res('google_cloud_run_v2_service', 'gateway'), 'template', 'containers');
    expect(metadata()['gateway-image']).toBe(cloudRun.image);
  });

  it('runs as pp-gateway, the only identity whose worker tokens the API accepts', () => {
    const template = res('google_compute_instance_template', 'gateway_connect');
    expect(nested(template, 'service_account')).toEqual({
      email: '${google_service_account.gateway.email}',
      scopes: ['cloud-platform'],
    });
    expect(res('google_service_account', 'gateway').account_id).toBe('pp-gateway');
    expect((locals().api_env as Record<string, string>).GATEWAY_SERVICE_ACCOUNT).toBe(
      '${google_service_account.gateway.email}',
    );
  });

  it('gives the script exactly the metadata keys it reads, CONTROL_PLANE_URL the API URL as on Cloud Run', () => {
    const read = new Set([...script().matchAll(/\bmd instance\/attributes\/([\w-]+)/g)].map((m) => m[1]!));
    expect(read.size).toBeGreaterThanOrEqual(4);
    const agents = ['google-logging-enabled', 'google-monitoring-enabled'];
    // The proxy VMs' own: no project-wide SSH key opens these either.
    const hostAccess = HOST_ACCESS_METADATA.map((m) => m.key);
    expect(Object.keys(metadata()).sort()).toEqual(
      ['startup-script', ...agents, ...hostAccess, ...read].sort(),
    );
    for (const a of agents) expect(metadata()[a]).toBe('true');
    for (const m of HOST_ACCESS_METADATA) expect(metadata()[m.key]).toBe(m.value);
    const gatewayEnv = locals().gateway_env as Record<string, string>;
    expect(metadata()['control-plane-url']).toBe('${local.api_url}');
    expect(metadata()['control-plane-url']).toBe(gatewayEnv.CONTROL_PLANE_URL);
    expect(metadata().region).toBe('${var.region}');
    // The settings the Cloud Run gateway gets from the same variables reach the VMs too.
    expect(metadata()['log-level']).toBe('${var.log_level}');
    expect(metadata()['gc-marking']).toBe('${var.gateway_gc_marking}');
    expect(gatewayEnv.GATEWAY_GC_MARKING).toBe('${var.gateway_gc_marking}');
    expect(metadata()['gc-threads']).toBe('${var.gateway_gc_threads}');
  });

  it('no secret value reaches the metadata: the clients secret goes by its id, read at boot by the VM', () => {
    // Each value is a literal or one of these references, none of which carries a secret's payload.
    const allowed = new Set([
      '${local.gateway_connect_script}',
      '${local.images.gateway}',
      '${local.api_url}',
      '${var.region}',
      '${local.secret_of_kind["gateway-clients"]}',
      '${var.log_level}',
      '${var.gateway_gc_marking}',
      '${var.gateway_gc_threads}',
    ]);
    for (const [key, value] of Object.entries(metadata())) {
      if (!value.includes('${')) continue;
      expect(allowed.has(value), `${key} = ${value}`).toBe(true);
    }
    // secret_of_kind maps a kind to a secret's id (a key of var.secrets), never to a version or payload.
    expect(String(locals().secret_of_kind).replace(/\s+/g, ' ')).toBe(
      '${{ for kind in ["discovery-tokens", "admin-tokens", "gateway-clients"] : kind => one([for id, s in var.secrets : id if s.kind == kind]) }}',
    );
    // Terraform never holds a secret's value at all: no version resource or data source anywhere.
    const versionBlocks = [...Object.keys(tf.resource), ...Object.keys(tf.data)].filter((t) =>
      t.startsWith('google_secret_manager_secret_version'),
    );
    expect(versionBlocks).toEqual([]);
    // The script reads the value with the VM's account, from the secret the metadata names.
    expect(script()).toMatch(
      /secrets\/\$\(md instance\/attributes\/clients-secret\)\/versions\/latest:access/,
    );
    expect((locals().gateway_secret_env as Record<string, string>).GATEWAY_CLIENT_USERS).toBe(
      'gateway-clients',
    );
  });

  it('the VM account gets, only while enabled, the image pull on the repository, log writing and metric writing', () => {
    const pull = res('google_artifact_registry_repository_iam_member', 'gateway_connect_pulls');
    expect(pull).toMatchObject({
      count: SWITCH,
      repository: '${google_artifact_registry_repository.images.name}',
      role: 'roles/artifactregistry.reader',
      member: '${google_service_account.gateway.member}',
    });
    expect((locals().project_roles as Record<string, string>).gateway).toBe(
      '${concat(["roles/pubsub.subscriber"], local.gateway_connect_enabled ? ["roles/logging.logWriter", "roles/monitoring.metricWriter"] : [])}',
    );
    expect(String(locals().members)).toMatch(/\bgateway\s+= google_service_account\.gateway\.member\b/);
  });
});

describe('the managed instance group and the passthrough load balancer', () => {
  it('a regional MIG of gateway_connect_instances VMs from the template, autohealed on /healthz', () => {
    const mig = res('google_compute_region_instance_group_manager', 'gateway_connect');
    expect(mig).toMatchObject({
      region: '${var.region}',
      target_size: '${var.gateway_connect_instances}',
      distribution_policy_zones: '${local.gateway_connect_zones}',
    });
    expect(nested(mig, 'version').instance_template).toBe(
      '${google_compute_instance_template.gateway_connect[0].self_link_unique}',
    );
    expect(nested(mig, 'auto_healing_policies').health_check).toBe(
      '${google_compute_region_health_check.gateway_connect_alive[0].id}',
    );
    // A regional MIG surges by 0 or at least its zone count; never a VM taken away before its successor.
    expect(nested(mig, 'update_policy')).toMatchObject({
      type: 'PROACTIVE',
      max_surge_fixed: '${local.gateway_connect_max_zones}',
      max_unavailable_fixed: 0,
    });
    expect(
      (res('google_compute_instance_template', 'gateway_connect').lifecycle as Block[])[0],
    ).toMatchObject({ create_before_destroy: true });
  });

  it('the group keeps its zones: a plan never replaces it, nor surges by fewer than its zone count', () => {
    // distribution_policy_zones is ForceNew in the provider, and the zones come from a data source read
    // at every plan (deferred, so unknown, whenever google_project_service.enabled has a pending change;
    // shorter whenever a zone is not UP). Unless the group ignores them after creation, either plans to
    // destroy every CONNECT VM — and fails, the backend service still using the group.
    const mig = res('google_compute_region_instance_group_manager', 'gateway_connect');
    const lifecycle = (mig.lifecycle as Block[] | undefined)?.[0];
    expect(lifecycle?.ignore_changes).toEqual(['${distribution_policy_zones}']);
    // The surge is a constant (valid: ≥ the zone count), never derived from the zones read this plan,
    // and it bounds how many zones the group is created in.
    const surge = nested(mig, 'update_policy').max_surge_fixed;
    expect(surge).toBe('${local.gateway_connect_max_zones}');
    expect(locals().gateway_connect_max_zones).toBe(3);
    expect(String(locals().gateway_connect_zones)).toContain(
      'min(local.gateway_connect_max_zones, length(data.google_compute_zones.gateway_connect[0].names))',
    );
  });

  it('an external passthrough NLB: regional TCP backend service on the MIG, forwarding rule on a reserved address', () => {
    const backend = res('google_compute_region_backend_service', 'gateway_connect');
    expect(backend).toMatchObject({
      region: '${var.region}',
      load_balancing_scheme: 'EXTERNAL',
      protocol: 'TCP',
      health_checks: ['${google_compute_region_health_check.gateway_connect_ready[0].id}'],
    });
    expect(nested(backend, 'backend')).toEqual({
      group: '${google_compute_region_instance_group_manager.gateway_connect[0].instance_group}',
      balancing_mode: 'CONNECTION',
    });
    const rule = res('google_compute_forwarding_rule', 'gateway_connect');
    expect(rule).toMatchObject({
      region: '${var.region}',
      load_balancing_scheme: 'EXTERNAL',
      ip_protocol: 'TCP',
      ip_address: '${google_compute_address.gateway_connect[0].address}',
      backend_service: '${google_compute_region_backend_service.gateway_connect[0].id}',
    });
    expect(res('google_compute_address', 'gateway_connect')).toMatchObject({
      region: '${var.region}',
      address_type: 'EXTERNAL',
    });
  });

  it('every name follows the proxyplane-… convention', () => {
    for (const [address, block] of ownBlocks()) {
      if (block.name === undefined && block.name_prefix === undefined) continue;
      expect(String(block.name ?? block.name_prefix), address).toMatch(/^proxyplane-gateway-connect/);
    }
  });
});

describe('docs/deploy.md gives the Terraform way', () => {
  const section = () =>
    readFileSync(join(repoRoot, 'docs/deploy.md'), 'utf8')
      .split("### Where the gateway's CONNECT listener runs")[1]!
      .split('\n## ')[0]!;

  it('names every gateway_connect_* variable and output, and rolls the MIG Terraform names', () => {
    const text = section();
    for (const name of Object.keys(tf.variable).filter((v) => v.startsWith('gateway_connect_')))
      expect(text, name).toMatch(new RegExp(`\`${name}\`|^#? ?${name} +=`, 'm'));
    for (const name of Object.keys(tf.output).filter((o) => o.startsWith('gateway_connect_')))
      expect(text, name).toContain(`terraform -chdir=terraform output -raw ${name}`);
    expect(text).toMatch(/gcloud compute instance-groups managed rolling-action replace/);
    expect(text).not.toMatch(/gcloud compute instances create/);
  });

  it("names the deployer role that creates the VMs' template and group (Compute Network Admin does not)", () => {
    expect(Object.keys(tf.resource)).toContain('google_compute_instance_template');
    expect(Object.keys(tf.resource)).toContain('google_compute_region_instance_group_manager');
    const prerequisites = readFileSync(join(repoRoot, 'docs/deploy.md'), 'utf8')
      .split('\n## Prerequisites\n')[1]!
      .split('\n## ')[0]!
      .replace(/\s+/g, ' ');
    expect(prerequisites).toMatch(/`gateway_connect_enabled` also Compute Instance Admin \(v1\)/);
  });
});
