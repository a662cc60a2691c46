// Where each piece of the plane listens (firebase.json + offset) and which functions exist yet: decided
// before anything starts, so every port can be checked up front.
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
