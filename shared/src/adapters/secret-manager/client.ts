// The one place a SecretManagerServiceClient is built: the real API on GCP (gRPC), the local emulator
// when SECRET_MANAGER_EMULATOR_HOST is set (REST, see local-endpoints.ts).
import { SecretManagerServiceClient } from '@google-cloud/secret-manager';
import { localClientOptions } from '../local-endpoints.js';

type ClientOptions = ConstructorParameters<typeof SecretManagerServiceClient>[0];

export function createSecretManagerClient(emulatorHost: string | undefined): SecretManagerServiceClient {
  // google-gax bundles its own google-auth-library, so the top-level PassThroughClient is a different
  // class to the type checker; at run time gax only calls its public methods.
  return new SecretManagerServiceClient(localClientOptions(emulatorHost) as ClientOptions);
}
