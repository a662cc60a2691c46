// squid.conf for a proxyplane proxy VM (Debian 12's squid 5.7). Replaces Debian's whole file, whose own
// `http_port 3128` and localnet rules must not survive: squid listens on the proxy port only, answers
// authenticated clients only, adds no Via or X-Forwarded-For, caches nothing, and refuses destinations
// inside the VM's own networks (the metadata server above all: it hands out the VM's token).
import { z } from 'zod';
import { DEFAULT_BLOCKED_DESTINATIONS } from './blocked-destinations.js';

export { DEFAULT_BLOCKED_DESTINATIONS };

const Port = z.number().int().min(1).max(65535);
const Path = z.string().regex(/^\/[A-Za-z0-9._/-]+$/, 'an absolute path without spaces');

const IPV4_CIDR = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})(?:\/(\d{1,2}))?$/;
const IPV6_CIDR = /^[0-9a-fA-F:]*:[0-9a-fA-F:]*(?:\/(\d{1,3}))?$/;

export const Cidr = z.string().refine((s) => {
  const v4 = IPV4_CIDR.exec(s);
  if (v4)
    return v4.slice(1, 5).every((o) => Number(o) <= 255) && (v4[5] === undefined || Number(v4[5]) <= 32);
  const v6 = IPV6_CIDR.exec(s);
  return v6 !== null && (v6[1] === undefined || Number(v6[1]) <= 128);
}, 'an IPv4 or IPv6 address or CIDR');

/** CONNECT is allowed to these ports only unless a spec says otherwise: squid's own default. */
export const DEFAULT_CONNECT_PORTS: readonly number[] = Object.freeze([443]);

/** CONNECT reaches these whatever a spec lists: the deployed probe's EGRESS tier (and BASIC without a
 *  URL) tunnels to the API's https echo endpoint on 443 through every VM. */
const ALWAYS_CONNECT_PORTS: readonly number[] = Object.freeze([443]);

/**
 * What a `connectPorts` list lets CONNECT reach, as squid.conf renders it: 443 and the list, sorted, once
 * each. Two lists with the same answer are the same setting (the admin API's sameSpec).
 */
export function connectPortsAllowed(ports: readonly number[] = DEFAULT_CONNECT_PORTS): number[] {
  return [...new Set([...ALWAYS_CONNECT_PORTS, ...ports])].sort((a, b) => a - b);
}

/** squid's `acl Safe_ports` as rendered below: every request to another port is refused, CONNECT included. */
const SAFE_PORTS = { listed: [80, 443], from: 1025 } as const;
const isSafePort = (p: number): boolean =>
  (SAFE_PORTS.listed as readonly number[]).includes(p) || p >= SAFE_PORTS.from;

/**
 * The ports CONNECT may reach (acl SSL_ports): the spec's `connectPorts`, the renderers' option. A port
 * squid's Safe_ports rule refuses anyway (below 1025, but 80 and 443) is refused here — listed, it would
 * still be a 403 — as the issue `connect_port_unsafe` (the admin API's 400 names it).
 */
export const ConnectPorts = z
  .array(
    Port.refine(isSafePort, {
      message: `squid refuses every port below ${SAFE_PORTS.from} but ${SAFE_PORTS.listed.join(' and ')} (acl Safe_ports)`,
      params: { issue: 'connect_port_unsafe' },
    }),
  )
  .min(1)
  .max(32);

export const SquidConfOptions = z.strictObject({
  port: Port,
  passwdFile: Path.default('/etc/squid/proxyplane.passwd'),
  authHelper: Path.default('/usr/lib/squid/basic_ncsa_auth'),
  /** CONNECT is allowed to these ports only (squid's own default: 443). */
  connectPorts: ConnectPorts.default(() => [...DEFAULT_CONNECT_PORTS]),
  blockedDestinations: z
    .array(Cidr)
    .max(128)
    .default([...DEFAULT_BLOCKED_DESTINATIONS]),
});
export type SquidConfOptions = z.input<typeof SquidConfOptions>;

const SSL_PORTS_ACL = 'acl SSL_ports port ';

/**
 * The CONNECT ports a configuration rendered above allows (its `acl SSL_ports port …` lines, which squid
 * adds up), or null when it has none: what the Compute emulator's VMs enforce, read from the same bytes
 * the deployed VM's squid reads. Only single ports, as renderSquidConf writes them.
 */
export function connectPortsOfSquidConf(conf: string): number[] | null {
  const ports: number[] = [];
  for (const line of conf.split('\n')) {
    if (!line.startsWith(SSL_PORTS_ACL)) continue;
    for (const word of line.slice(SSL_PORTS_ACL.length).trim().split(/\s+/)) {
      const port = Port.safeParse(/^\d{1,5}$/.test(word) ? Number(word) : Number.NaN);
      if (!port.success) return null;
      ports.push(port.data);
    }
  }
  return ports.length > 0 ? [...new Set(ports)].sort((a, b) => a - b) : null;
}

export function renderSquidConf(input: SquidConfOptions): string {
  const o = SquidConfOptions.parse(input);
  const blocked = o.blockedDestinations.length > 0;
  return [
    '# Managed by proxyplane (shared/src/domain/cloud-init); rewritten on every boot. See docs/cloud-init.md.',
    `http_port ${o.port}`,
    // No other listener: ICP, HTCP and SNMP off, no ICMP pinger helper.
    'icp_port 0',
    'htcp_port 0',
    'snmp_port 0',
    'pinger_enable off',
    '',
    `auth_param basic program ${o.authHelper} ${o.passwdFile}`,
    'auth_param basic children 5 startup=1 idle=1',
    'auth_param basic realm proxyplane',
    'auth_param basic credentialsttl 5 minutes',
    'auth_param basic casesensitive on',
    'acl authenticated proxy_auth REQUIRED',
    // Sorted, once each: a spec that lists the same ports in another order renders the same bytes (the
    // script's digest is in the spec hash: a reordering must not replace the VM). 443 always: the probe
    // tunnels to the API's https echo endpoint through every VM (EGRESS, and BASIC without a URL), so a
    // list without it left the VM Unhealthy for good (docs/health.md).
    `${SSL_PORTS_ACL}${connectPortsAllowed(o.connectPorts).join(' ')}`,
    `acl Safe_ports port ${SAFE_PORTS.listed.join(' ')} ${SAFE_PORTS.from}-65535`,
    'acl CONNECT method CONNECT',
    ...(blocked ? [`acl proxyplane_blocked dst ${o.blockedDestinations.join(' ')}`] : []),
    '',
    // Order matters: authentication is demanded (407) before any destination rule is looked at.
    'http_access deny manager',
    'http_access deny !Safe_ports',
    'http_access deny CONNECT !SSL_ports',
    'http_access deny !authenticated',
    ...(blocked ? ['http_access deny proxyplane_blocked'] : []),
    'http_access allow authenticated',
    'http_access deny all',
    '',
    // Anonymous toward the target: no Via, no X-Forwarded-For (deleted, not "off" which sends "unknown").
    'via off',
    'forwarded_for delete',
    'httpd_suppress_version_string on',
    // squid adds `Cache-Control: max-age=259200` (its own 3-day limit) to a request that has none, the mark
    // of a squid in the path: only a Cache-Control the client sent goes on.
    'acl client_cache_control req_header Cache-Control .',
    'request_header_access Cache-Control deny !client_cache_control',
    'reply_header_access X-Cache deny all',
    'reply_header_access X-Cache-Lookup deny all',
    '',
    // A relay, not a cache.
    'cache deny all',
    'cache_mem 8 MB',
    'shutdown_lifetime 3 seconds',
    'coredump_dir /var/spool/squid',
    '',
  ].join('\n');
}
