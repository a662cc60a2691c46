// The demo fleet `npm start` creates on an empty plane: three managed proxies on the Compute emulator in
// two regions (three zones) with different attributes, and two external proxies that the plane only
// watches: one HTTP, one SOCKS5. All share one Secret Manager secret for their credentials. Health checks run every 5 s with a
// failure threshold of 2, so that a proxy killed through the Compute emulator turns Unhealthy in seconds.
// Two of them are in the gateway pool (the gateway carries requests over them; they are not leasable).

export const DEMO_SECRET = 'demo-proxy-credentials';
export const DEMO_USERNAME = 'demo';
export const DEMO_POOL = 'demo';

export interface DemoProxy {
  name: string;
  spec: Record<string, unknown>;
}

const common = {
  credentialsRef: { secret: DEMO_SECRET, version: 'latest' },
  healthCheck: { intervalSeconds: 5, timeoutSeconds: 3, failureThreshold: 2, successThreshold: 1 },
  capacity: 4,
};

interface Endpoint {
  host: string;
  port: number;
}

export function demoFleet(external: Endpoint, socks: Endpoint): DemoProxy[] {
  return [
    {
      name: 'demo-us-1',
      spec: {
        mode: 'managed',
        zone: 'us-central1-a',
        attributes: { pool: DEMO_POOL, region: 'us', tier: 'standard' },
        ...common,
      },
    },
    {
      name: 'demo-us-2',
      spec: {
        mode: 'managed',
        zone: 'us-central1-b',
        attributes: { pool: DEMO_POOL, region: 'us', tier: 'premium' },
        gatewayPool: true,
        ...common,
      },
    },
    {
      name: 'demo-eu-1',
      spec: {
        mode: 'managed',
        zone: 'europe-west1-b',
        attributes: { pool: DEMO_POOL, region: 'eu', tier: 'standard' },
        gatewayPool: true,
        ...common,
      },
    },
    {
      name: 'demo-external',
      spec: {
        mode: 'external',
        endpoint: { host: external.host, port: external.port, protocol: 'http' },
        attributes: { pool: DEMO_POOL, region: 'local', tier: 'byo' },
        ...common,
      },
    },
    {
      name: 'demo-socks',
      spec: {
        mode: 'external',
        endpoint: { host: socks.host, port: socks.port, protocol: 'socks5' },
        attributes: { pool: DEMO_POOL, region: 'local', tier: 'socks5' },
        ...common,
      },
    },
  ];
}
