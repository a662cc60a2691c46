// Which ports a CONNECT may reach. A deployed proxy VM's squid allows only its spec's `connectPorts`
// (`acl SSL_ports`, `http_access deny CONNECT !SSL_ports`: 403 Forbidden, asked before credentials);
// an emulated VM passes its own list here so that what works locally works on GCE. Without a list the
// proxy tunnels to any port, as an external proxy in a test or the standalone CLI may.

/** `undefined`: any port. */
export type ConnectPortRule = ReadonlySet<number> | undefined;

export function connectPortRule(ports: readonly number[] | undefined): ConnectPortRule {
  return ports === undefined ? undefined : new Set(ports);
}

export function connectPortAllowed(rule: ConnectPortRule, port: number): boolean {
  return rule === undefined || rule.has(port);
}

/** The standalone CLI's `--connect-ports`: `any`, or a comma-separated list of ports (1–65535). */
export function parseConnectPortsFlag(text: string): number[] | undefined {
  if (text.trim() === 'any') return undefined;
  const words = text.split(',').map((w) => w.trim());
  const ports = words.map((w) => (/^\d{1,5}$/.test(w) ? Number(w) : Number.NaN));
  if (ports.length === 0 || ports.some((p) => !(p >= 1 && p <= 65535))) {
    throw new Error(`invalid --connect-ports ${text}: "any" or a comma-separated list of ports 1-65535`);
  }
  return ports;
}
