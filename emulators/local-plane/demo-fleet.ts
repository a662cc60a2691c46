// The demo fleet `npm start` creates on an empty plane: three managed proxies on the Compute emulator in
// two regions (three zones) with different attributes, and two external proxies that the plane only
// watches: one HTTP, one SOCKS5. All share one Secret Manager secret for their credentials. Health checks run every 5 s with a
// failure threshold of 2, so that a proxy killed through the Compute emulator turns Unhealthy in seconds.
// Two of them are in the gateway pool (the gateway carries requests over them; they are not leasable).
// The managed ones list their CONNECT ports (`connectPorts`), as an operator must for any port but 443:
// their VMs' squid — and the Compute emulator's VMs, which read the same startup script — refuse a
// CONNECT to any other port with 403. (The API's port needs no listing: the local plane's Compute
// emulator lets every VM reach it, as every deployed VM reaches the API's 443 — our-emulators.ts.)
import { DEFAULT_CONNECT_PORTS } from '../../shared/src/domain/cloud-init/squid-conf.js';

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

/** The local ports a CONNECT through a managed demo proxy must reach. */
export interface DemoConnectTargets {
  /** The demo site's HTTPS port (the printed `curl https://…` through the gateway tunnels to it). */
  tlsPort: number;
}

/** squid's default (443) plus the demo site's HTTPS port, sorted. */
export function demoConnectPorts(t: DemoConnectTargets): number[] {
  return [...new Set([...DEFAULT_CONNECT_PORTS, t.tlsPort])].sort((a, b) => a - b);
}

export function demoFleet(external: Endpoint, socks: Endpoint, targets: DemoConnectTargets): DemoProxy[] {
  const managed = { ...common, connectPorts: demoConnectPorts(targets) };
  return [
    {
      name: 'demo-us-1',
      spec: {
        mode: 'managed',
        zone: 'us-central1-a',
        attributes: { pool: DEMO_POOL, region: 'us', tier: 'standard' },
        ...managed,
      },
    },
    {
      name: 'demo-us-2',
      spec: {
        mode: 'managed',
        zone: 'us-central1-b',
        attributes: { pool: DEMO_POOL, region: 'us', tier: 'premium' },
        gatewayPool: true,
        ...managed,
      },
    },
    {
      name: 'demo-eu-1',
      spec: {
        mode: 'managed',
        zone: 'europe-west1-b',
        attributes: { pool: DEMO_POOL, region: 'eu', tier: 'standard' },
        gatewayPool: true,
        ...managed,
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
