// firebase.json is the single source of every local port (Google's emulators and ours).
// Read it here only; entry points and tests take their ports from this module.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export interface HostPort {
  host: string;
  port: number;
}

export interface LocalPorts {
  firestore: HostPort;
  pubsub: HostPort;
  compute: HostPort;
  secretmanager: HostPort;
  scheduler: HostPort;
  functions: { host: string; ports: Record<string, number> };
  api: HostPort;
  gateway: { host: string; proxyPort: number; httpPort: number };
  /** the demo site: plain HTTP on `port`, HTTPS on `tlsPort` */
  demoTarget: HostPort & { tlsPort: number };
}

export const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));

export function loadLocalPorts(file = `${repoRoot}firebase.json`): LocalPorts {
  const json = JSON.parse(readFileSync(file, 'utf8')) as { emulators: LocalPorts };
  return json.emulators;
}

export const hostPort = (hp: HostPort): string => `${hp.host}:${hp.port}`;

/**
 * PROXYPLANE_PORT_OFFSET, read one way by all that read it (`npm start`, `npm run emulators`, the CLI): a
 * non-negative integer that keeps every firebase.json port under 65535 (unset: 0). A typo ("1O", "1.5",
 * "-100") read as 0 sent the CLI to the default plane, perhaps another one running. Throws RangeError.
 */
export function portOffsetOf(raw: string | undefined): number {
  const value = raw ?? '0';
  if (!/^\d+$/.test(value))
    throw new RangeError(`PROXYPLANE_PORT_OFFSET must be a non-negative integer, got "${value}"`);
  const offset = Number(value);
  if (offset > 40_000) throw new RangeError(`PROXYPLANE_PORT_OFFSET ${offset} pushes ports past 65535`);
  return offset;
}
