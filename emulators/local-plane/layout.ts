// Where each piece of the plane listens (firebase.json + offset) and which pieces exist yet: decided
// before anything starts, so every port can be checked up front.
import { type LocalPorts, loadLocalPorts } from '../../shared/src/config/local-ports.js';
import { type FunctionTable, loadFunctionTable } from '../../shared/src/config/topology.js';
import { type FunctionInventory, functionInventory } from './functions.js';
import { isBuilt, OPTIONAL_EMULATORS, type OptionalEmulator } from './optional.js';
import { offsetPorts, type PortClaim } from './ports.js';

export interface PlaneLayout {
  ports: LocalPorts;
  inventory: FunctionInventory;
  optional: Array<{ key: 'compute' | 'secretmanager'; emulator: OptionalEmulator; built: boolean }>;
  functionPort(name: string): number;
  /** Every port the plane will bind, with its firebase.json key. */
  claims: PortClaim[];
}

export function planeLayout(
  portOffset: number,
  deps: { ports?: LocalPorts; functions?: FunctionTable; built?: (e: OptionalEmulator) => boolean } = {},
): PlaneLayout {
  const ports = offsetPorts(deps.ports ?? loadLocalPorts(), portOffset);
  const inventory = functionInventory(deps.functions ?? loadFunctionTable());
  const functionPort = (name: string): number => {
    const port = ports.functions.ports[name];
    if (port === undefined) throw new Error(`firebase.json has no emulators.functions.ports.${name}`);
    return port;
  };
  const optional = (['compute', 'secretmanager'] as const).map((key) => ({
    key,
    emulator: OPTIONAL_EMULATORS[key],
    built: (deps.built ?? isBuilt)(OPTIONAL_EMULATORS[key]),
  }));
  const claims: PortClaim[] = [
    { key: 'emulators.firestore.port', ...ports.firestore },
    { key: 'emulators.pubsub.port', ...ports.pubsub },
    ...optional.filter((o) => o.built).map((o) => ({ key: `emulators.${o.key}.port`, ...ports[o.key] })),
    { key: 'emulators.scheduler.port', ...ports.scheduler },
    { key: 'emulators.api.port', ...ports.api },
    ...inventory.built.map((fn) => ({
      key: `emulators.functions.ports.${fn.name}`,
      host: ports.functions.host,
      port: functionPort(fn.name),
    })),
  ];
  return { ports, inventory, optional, functionPort, claims };
}
