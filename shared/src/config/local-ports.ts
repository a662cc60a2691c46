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
