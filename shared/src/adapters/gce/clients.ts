// The one place the gce provider's clients are built: real Google endpoints on GCP, the compute emulator
// locally (COMPUTE_EMULATOR_HOST), with the options the recipes verified (§3).
//
// The two clients come from their own modules, not the package's index: the index loads every client of
// v1, v1beta and v1small and a 30 MB protos.js beside them, ~2.4 s of CPU at every cold start of the
// reconcile and gc functions (and of every process the tests start), where these two modules and the
// protos JSON they read take ~0.7 s. The package has no `exports` map, so the paths are the package's
// own; clients.unit.test.ts fails if an upgrade moves them. The protos JSON is cut to what the two
// services reach before the clients read it (compute-protos.ts): another ~1.5 s.
import { InstancesClient } from '@google-cloud/compute/build/src/v1/instances_client.js';
import { ZoneOperationsClient } from '@google-cloud/compute/build/src/v1/zone_operations_client.js';
import { localClientOptions } from '../local-endpoints.js';
import { pruneInstalledComputeProtos } from './compute-protos.js';
import { GceProvider, type GceProviderOptions } from './gce-provider.js';

export interface GceConfig extends Omit<GceProviderOptions, 'instances' | 'zoneOperations'> {
  /** host:port of the compute emulator; undefined on GCP. */
  computeEndpoint?: string;
}

export function makeGceProvider(config: GceConfig): { provider: GceProvider; close(): Promise<void> } {
  const { computeEndpoint, ...options } = config;
  // Two copies of google-auth-library (ours and gax's) make PassThroughClient's types differ; same class at runtime.
  const clientOptions = localClientOptions(computeEndpoint) as ConstructorParameters<
    typeof InstancesClient
  >[0];
  // Before the first client: each builds its proto root from the (then pruned) file (compute-protos.ts).
  pruneInstalledComputeProtos();
  const instances = new InstancesClient(clientOptions);
  const zoneOperations = new ZoneOperationsClient(clientOptions);
  return {
    provider: new GceProvider({ ...options, instances, zoneOperations }),
    close: async () => {
      await Promise.all([instances.close(), zoneOperations.close()]);
    },
  };
}
