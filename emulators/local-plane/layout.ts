// Where each piece of the plane listens (firebase.json + offset) and which functions exist yet: decided
// before anything starts, so every port can be checked up front.
import { resolve } from 'node:path';
import { type LocalPorts, loadLocalPorts } from '../../shared/src/config/local-ports.js';
import { type FunctionTable, loadFunctionTable } from '../../shared/src/config/topology.js';
import { type FunctionInventory, functionInventory } from './functions.js';
import { offsetPorts, type PortClaim } from './ports.js';

export interface PlaneLayout {
  ports: LocalPorts;
  inventory: FunctionInventory;
  functionPort(name: string): number;
  /** Every port the plane will bind, with its firebase.json key. */
  claims: PortClaim[];
}

export function planeLayout(
  portOffset: number,
  deps: { ports?: LocalPorts; functions?: FunctionTable } = {},
): PlaneLayout {
  const ports = offsetPorts(deps.ports ?? loadLocalPorts(), portOffset);
  const inventory = functionInventory(deps.functions ?? loadFunctionTable());
  const functionPort = (name: string): number => {
    const port = ports.functions.ports[name];
    if (port === undefined) throw new Error(`firebase.json has no emulators.functions.ports.${name}`);
    return port;
  };
  const claims: PortClaim[] = [
    { key: 'emulators.firestore.port', ...ports.firestore },
    { key: 'emulators.pubsub.port', ...ports.pubsub },
    { key: 'emulators.compute.port', ...ports.compute },
    { key: 'emulators.secretmanager.port', ...ports.secretmanager },
    { key: 'emulators.scheduler.port', ...ports.scheduler },
    { key: 'emulators.api.port', ...ports.api },
    { key: 'emulators.gateway.proxyPort', host: ports.gateway.host, port: ports.gateway.proxyPort },
    { key: 'emulators.gateway.httpPort', host: ports.gateway.host, port: ports.gateway.httpPort },
    ...inventory.built.map((fn) => ({
      key: `emulators.functions.ports.${fn.name}`,
      host: ports.functions.host,
      port: functionPort(fn.name),
    })),
  ];
  return { ports, inventory, functionPort, claims };
}

/**
 * The port offset to advise a second plane beside a running one (at `runningOffset`, from the state dir
 * `refusedDir`), whose advice names the state dir `.local-plane/<offset>`: this start's own offset, else
 * 1000, 2000, … — the first whose ports share none with the running plane's and whose dir is not the one
 * refused. The ports themselves were not checked (the state dir is asked first), so an offset only near
 * the running plane's (10 beside 0) would send the user on to a taken port.
 */
export function adviceOffset(
  own: number,
  runningOffset: number,
  refusedDir: string,
  deps: Parameters<typeof planeLayout>[1] = {},
): number {
  const taken = new Set(planeLayout(runningOffset, deps).claims.map((c) => `${c.host}:${c.port}`));
  const clear = (o: number) =>
    o !== 0 &&
    resolve(`.local-plane/${o}`) !== resolve(refusedDir) &&
    !planeLayout(o, deps).claims.some((c) => taken.has(`${c.host}:${c.port}`));
  if (clear(own)) return own;
  for (let o = 1000; ; o += 1000) if (clear(o)) return o;
}
