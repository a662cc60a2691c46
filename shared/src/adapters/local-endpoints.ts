// Client options that point a real @google-cloud/* REST client at a local emulator
// (../shared/design/gcp-offline-recipes.md §3): host and port apart, plain http, REST fallback, no auth.
import { PassThroughClient } from 'google-auth-library';

export interface LocalEndpointOptions {
  apiEndpoint: string;
  port: number;
  protocol: 'http';
  fallback: true;
  authClient: PassThroughClient;
}

/** `endpoint` is "host:port"; undefined means the real Google API (default client options). */
export function localClientOptions(
  endpoint: string | undefined,
): LocalEndpointOptions | Record<string, never> {
  if (!endpoint) return {};
  const i = endpoint.lastIndexOf(':');
  return {
    apiEndpoint: endpoint.slice(0, i),
    port: Number(endpoint.slice(i + 1)),
    protocol: 'http',
    fallback: true,
    authClient: new PassThroughClient(),
  };
}
