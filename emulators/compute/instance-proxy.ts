// What an emulated VM's boot does with its metadata, standing in for the deployed startup script:
// read the proxy port (`proxyplane-proxy-port`, default 3128), fetch the credentials named by the
// Secret Manager resource in `proxyplane-credentials-secret` (the real VM uses the metadata-server
// token; here `resolveCredentials`), then start the forward proxy on the instance's own address,
// letting CONNECT reach only the ports the squid.conf in its `startup-script` allows (the squid
// default, 443, when the script carries none: a custom script, or none at all).
// A named secret that cannot be read leaves the proxy down (fail closed), never open.
import type { CredentialsRule } from '../../shared/src/domain/cloud-init/credentials.js';
import { DEFAULT_CONNECT_PORTS } from '../../shared/src/domain/cloud-init/squid-conf.js';
import {
  connectPortsOfStartupScript,
  MANAGED_USERNAME_CHECK,
} from '../../shared/src/domain/cloud-init/startup-script.js';
import { SecretAccessError } from '../../shared/src/ports/secrets.js';
import type { ProxyTimeouts } from '../forward-proxy/context.js';
import { createForwardProxy, type ForwardProxy } from '../forward-proxy/proxy.js';
import type { LoopbackPool } from './address-pool.js';
import {
  DEFAULT_PROXY_PORT,
  type InstanceSpec,
  METADATA_CREDENTIALS_SECRET,
  METADATA_PROXY_PORT,
  METADATA_STARTUP_SCRIPT,
  metadataValue,
} from './instance-spec.js';
import type { EmulatorLog } from './log.js';
import { MalformedCredentials } from './secret-credentials.js';
import { heldOnWildcard, wildcardHolderMessage } from './wildcard-port.js';

/** `rule`: how the VM's script reads the secret (credentialsRuleOf): the default script's, or an own one's. */
export type ResolveCredentials = (
  secretResourceName: string,
  rule?: CredentialsRule,
) => Promise<string | null>;

export interface ProxyBootDeps {
  pool: LoopbackPool;
  resolveCredentials?: ResolveCredentials;
  proxyTimeouts?: Partial<ProxyTimeouts>;
  /** Between two failed reads of a VM's secret (2 s by default; the startup script waits 15 s). */
  credentialRetryDelayMs?: number;
  /** allowed to every VM's CONNECT besides its own list (ComputeEmulatorOptions.hostConnectPorts) */
  hostConnectPorts?: readonly number[];
  log: EmulatorLog;
}

export type ProxyBoot = { ok: true; proxy: ForwardProxy } | { ok: false; error: string };

/**
 * Another process may hold address:port (a developer's `npm start` beside a test run): move on. Not
 * when the port is held on the wildcard address (wildcard-port.ts): no address would do.
 */
const BIND_ATTEMPTS = 8;

export function proxyPortOf(spec: InstanceSpec): number | null {
  const raw = metadataValue(spec, METADATA_PROXY_PORT);
  if (raw === undefined) return DEFAULT_PROXY_PORT;
  const port = Number(raw);
  return /^\d{1,5}$/.test(raw.trim()) && port >= 1 && port <= 65535 ? port : null;
}

/**
 * The rule the VM's script reads its secret by: the managed rule where the script holds the default's
 * username check (the default startup script, or a copy that kept it), else the external rule — a
 * cloud-init of the proxy's own decides, as the probe and the lease service read its secret
 * (credentialsRuleOf).
 */
function credentialsRuleOfVm(spec: InstanceSpec): CredentialsRule {
  const script = metadataValue(spec, METADATA_STARTUP_SCRIPT);
  return script?.includes(MANAGED_USERNAME_CHECK) ? 'managed' : 'external';
}

/**
 * The ports the VM's squid lets CONNECT reach: those of the squid.conf the default startup script
 * writes (the spec's `connectPorts`), else squid's default. The same bytes the deployed VM runs.
 */
export function connectPortsOf(spec: InstanceSpec): number[] {
  const script = metadataValue(spec, METADATA_STARTUP_SCRIPT);
  return (script === undefined ? null : connectPortsOfStartupScript(script)) ?? [...DEFAULT_CONNECT_PORTS];
}

/**
 * The default startup script reads the secret up to 20 times, 15 s apart (SECRET_ATTEMPTS, startup-script.ts)
 * — whatever failed: no answer, a 5xx, and a refused or missing secret too (a grant made moments before the
 * proxy takes minutes to reach Secret Manager) — before the VM gives up and its proxy stays down. So does
 * the emulated boot, `credentialRetryDelayMs` apart (2 s by default: the local plane runs faster), so that a
 * secret or grant made a little after the proxy serves locally as it does on GCE. Only a malformed secret
 * is final at once: the script reads it once the read succeeds, and refuses it.
 */
export const CREDENTIAL_READ_ATTEMPTS = 20;

/** Worth another try: anything but a secret that was read and is malformed. */
const passing = (err: unknown): boolean => !(err instanceof MalformedCredentials);

/** The credentials a VM boots with, read as its startup script reads them (see CREDENTIAL_READ_ATTEMPTS). */
export async function bootCredentials(
  spec: InstanceSpec,
  deps: Pick<ProxyBootDeps, 'resolveCredentials' | 'credentialRetryDelayMs'>,
  wanted: () => boolean = () => true,
): Promise<{ value: string | null } | { error: string }> {
  const secret = metadataValue(spec, METADATA_CREDENTIALS_SECRET);
  if (secret === undefined) return { value: null };
  if (!deps.resolveCredentials) return { error: `no credential resolver configured for ${secret}` };
  for (let attempt = 1; ; attempt++) {
    try {
      const value = await deps.resolveCredentials(secret, credentialsRuleOfVm(spec));
      if (value === null) throw new SecretAccessError('not_found', secret, `secret ${secret} not found`);
      if (!value.includes(':')) return { error: `secret ${secret} is not "user:pass"` };
      return { value };
    } catch (err) {
      if (attempt >= CREDENTIAL_READ_ATTEMPTS || !passing(err) || !wanted()) {
        return {
          error: `reading secret ${secret} failed: ${err instanceof Error ? err.message : String(err)}`,
        };
      }
      await new Promise((resolve) => setTimeout(resolve, deps.credentialRetryDelayMs ?? 2_000));
    }
  }
}

/**
 * Starts the proxy on `vm.address`. When that address is busy on the port, the VM moves to another
 * one and `vm.address` is updated at once, so whoever releases the VM's address releases the right one.
 * `wanted` is asked again after the credentials read (which may take a while) and before every bind: a
 * boot overtaken meanwhile (the VM stopped or deleted, the emulator reset or stopped) binds nothing,
 * so nothing of the emulator listens once its stop has returned.
 */
export async function bootProxy(
  vm: { spec: InstanceSpec; address: string },
  deps: ProxyBootDeps,
  wanted: () => boolean = () => true,
): Promise<ProxyBoot> {
  const { spec } = vm;
  const port = proxyPortOf(spec);
  if (port === null) return { ok: false, error: `invalid ${METADATA_PROXY_PORT} metadata` };
  const creds = await bootCredentials(spec, deps, wanted);
  if ('error' in creds) return { ok: false, error: creds.error };
  const connectPorts = [...new Set([...connectPortsOf(spec), ...(deps.hostConnectPorts ?? [])])];
  for (let attempt = 1; ; attempt++) {
    if (!wanted()) return { ok: false, error: 'boot overtaken before the proxy started' };
    const current = vm.address;
    const proxy = createForwardProxy({
      ...deps.proxyTimeouts,
      host: current,
      port,
      // the VM egresses from its own address: origins (and the EGRESS health tier) see it
      localAddress: current,
      credentials: creds.value,
      connectPorts,
      log: (severity, message, fields) => deps.log(severity, message, { instance: spec.name, ...fields }),
    });
    try {
      await proxy.listen();
      return { ok: true, proxy };
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      // Every address would fail alike, each taking one more from the pool for good: stay, and say why.
      if (code === 'EADDRINUSE' && (await heldOnWildcard(port))) {
        return {
          ok: false,
          error: `proxy could not listen on ${current}:${port}: ${wildcardHolderMessage(port)}`,
        };
      }
      const next = code === 'EADDRINUSE' && attempt < BIND_ATTEMPTS ? deps.pool.allocate() : null;
      if (next === null) {
        return { ok: false, error: `proxy could not listen on ${current}:${port}: ${code ?? String(err)}` };
      }
      deps.log('WARNING', 'instance address busy, moving to another', {
        instance: spec.name,
        from: current,
        to: next,
      });
      // The busy address stays taken in this pool: something else on the machine holds it (another
      // emulator's proxy), and handing it out again would only fail the next boot the same way.
      vm.address = next;
    }
  }
}
