// The plane's ports: firebase.json's, shifted by the port offset, and checked free before anything
// starts, so a clash fails at once with the port and the firebase.json key that set it.
import { createServer } from 'node:net';
import type { HostPort, LocalPorts } from '../../shared/src/config/local-ports.js';
import { heldOnWildcard, wildcardHolderMessage } from '../compute/wildcard-port.js';

const shift = (hp: HostPort, n: number): HostPort => ({ host: hp.host, port: hp.port + n });

export function offsetPorts(ports: LocalPorts, n: number): LocalPorts {
  return {
    firestore: shift(ports.firestore, n),
    pubsub: shift(ports.pubsub, n),
    compute: shift(ports.compute, n),
    secretmanager: shift(ports.secretmanager, n),
    scheduler: shift(ports.scheduler, n),
    functions: {
      host: ports.functions.host,
      ports: Object.fromEntries(Object.entries(ports.functions.ports).map(([k, p]) => [k, p + n])),
    },
    api: shift(ports.api, n),
    gateway: {
      ...ports.gateway,
      proxyPort: ports.gateway.proxyPort + n,
      httpPort: ports.gateway.httpPort + n,
    },
    demoTarget: { ...shift(ports.demoTarget, n), tlsPort: ports.demoTarget.tlsPort + n },
  };
}

export interface PortClaim extends HostPort {
  /** Where the port comes from, e.g. `emulators.functions.ports.reconcile`. */
  key: string;
}

export class PortInUseError extends Error {
  readonly kind = 'port_in_use';
  constructor(readonly claims: PortClaim[]) {
    super(
      claims.map((c) => `port ${c.port} on ${c.host} (firebase.json ${c.key}) is already in use`).join('\n'),
    );
    this.name = 'PortInUseError';
  }
}

function isFree({ host, port }: HostPort): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once('error', () => resolve(false));
    srv.listen({ host, port, exclusive: true }, () => srv.close(() => resolve(true)));
  });
}

/** Throws PortInUseError naming every claimed port that something else holds. */
export async function assertPortsFree(claims: PortClaim[]): Promise<void> {
  const busy: PortClaim[] = [];
  for (const claim of claims) if (!(await isFree(claim))) busy.push(claim);
  if (busy.length > 0) throw new PortInUseError(busy);
}

export class WildcardPortError extends Error {
  readonly kind = 'port_held_on_wildcard';
  constructor(readonly port: number) {
    super(`the emulated VMs' proxies listen on port ${port}, but ${wildcardHolderMessage(port)}`);
    this.name = 'WildcardPortError';
  }
}

/**
 * Throws WildcardPortError when the VMs' proxy port is held on the wildcard address. Not in firebase.json
 * and never offset (a managed proxy's port is its spec's), so no other check sees it; left to the VMs'
 * boots, the demo fleet came up without proxies, and crawlers' traffic to their addresses went to that
 * other process.
 */
export async function assertNotHeldOnWildcard(port: number): Promise<void> {
  if (await heldOnWildcard(port)) throw new WildcardPortError(port);
}
