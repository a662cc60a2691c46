// The one place the gce provider's clients are built: real Google endpoints on GCP, the compute emulator
// locally (COMPUTE_EMULATOR_HOST), with the options the recipes verified (§3).
import { InstancesClient, ZoneOperationsClient } from '@google-cloud/compute';
import { localClientOptions } from '../local-endpoints.js';
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
  const instances = new InstancesClient(clientOptions);
  const zoneOperations = new ZoneOperationsClient(clientOptions);
  return {
    provider: new GceProvider({ ...options, instances, zoneOperations }),
    close: async () => {
      await Promise.all([instances.close(), zoneOperations.close()]);
    },
  };
}
