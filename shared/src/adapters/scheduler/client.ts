// The one place a CloudSchedulerClient is built: the real API on GCP (gRPC), the local scheduler's REST
// front end (emulators/scheduler/server.ts) when SCHEDULER_EMULATOR_HOST is set (recipes §5).
import { CloudSchedulerClient } from '@google-cloud/scheduler';
import { localClientOptions } from '../local-endpoints.js';

type ClientOptions = ConstructorParameters<typeof CloudSchedulerClient>[0];

export function createCloudSchedulerClient(emulatorHost: string | undefined): CloudSchedulerClient {
  // google-gax bundles its own google-auth-library, so the top-level PassThroughClient is a different
  // class to the type checker; at run time gax only calls its public methods.
  return new CloudSchedulerClient(localClientOptions(emulatorHost) as ClientOptions);
}
