import { describe, expect, it } from 'vitest';
import { ProxyName, ProxySpec } from '../../shared/src/domain/proxy.js';
import { demoFleet } from './demo-fleet.js';
import { demoInstructions } from './demo-instructions.js';

const base = {
  apiUrl: 'http://127.0.0.1:18300',
  target: '127.0.0.1:18320',
  fleetUrl: 'http://127.0.0.1:18300/fleet?token=t',
};

describe('demoInstructions', () => {
  it('leases with the CLI, fetches the demo target through the lease, and releases it', () => {
    const text = demoInstructions(base);
    expect(text).toContain(
      '  lease=$(npx proxyplane leases acquire --selector pool=demo,region=us --target 127.0.0.1:18320 -o env) &&\n' +
        '    eval "$lease" && curl -sS -x "$PROXYPLANE_PROXY_URL" http://127.0.0.1:18320/\n' +
        '  npx proxyplane leases release "$PROXYPLANE_LEASE_ID"\n',
    );
    expect(text).toContain('"target":"127.0.0.1:18320"');
    // The curl-only lease asks for no protocols: it must keep getting an http proxy from the demo pool.
    expect(text).toContain(`-d '{"selector":{"pool":"demo"},"target":"127.0.0.1:18320"}'`);
    expect(text).toContain('Fleet page: http://127.0.0.1:18300/fleet?token=t');
    expect(text).toContain('the gateway is not part of this plane yet');
  });

  it('leases the SOCKS5 proxy, asking for socks5 (opt-in), and fetches through its socks5:// URL', () => {
    expect(demoInstructions(base)).toContain(
      '  lease=$(npx proxyplane leases acquire --selector pool=demo,tier=socks5 --protocol socks5 --target 127.0.0.1:18320 -o env) &&\n' +
        '    eval "$lease" && curl -sS -x "$PROXYPLANE_PROXY_URL" http://127.0.0.1:18320/\n',
    );
  });

  it('shows the gateway fetch and the kill command when there are', () => {
    const text = demoInstructions({
      ...base,
      gatewayProxyUrl: 'http://u:p@127.0.0.1:18310',
      killCommand: 'curl -X POST k',
    });
    expect(text).toContain('  curl -sS -x http://u:p@127.0.0.1:18310 http://127.0.0.1:18320/');
    expect(text).toContain('Kill a proxy and watch it turn Unhealthy: curl -X POST k');
    expect(text).not.toContain('https://');
  });

  it('fetches the HTTPS demo site through the gateway (CONNECT) when it runs, trusting its certificate', () => {
    const text = demoInstructions({
      ...base,
      gatewayProxyUrl: 'http://u:p@127.0.0.1:18310',
      tlsTarget: '127.0.0.1:18321',
      caFile: '/plane/demo-target/cert.pem',
    });
    expect(text).toContain(
      '  curl -sS -x http://u:p@127.0.0.1:18310 http://127.0.0.1:18320/\n' +
        "  curl -sS --cacert '/plane/demo-target/cert.pem' -x http://u:p@127.0.0.1:18310 https://127.0.0.1:18321/",
    );
  });
});

describe('demoFleet', () => {
  it('is three managed proxies in two regions and two external (HTTP, SOCKS5), all in the demo pool with credentials', () => {
    const fleet = demoFleet(
      { host: '127.0.0.1', port: 4000 },
      { host: '127.0.0.1', port: 4001 },
      { tlsPort: 18321 },
    );
    expect(
      fleet.map((p) => [p.name, p.spec.mode, (p.spec.attributes as Record<string, string>).region]),
    ).toEqual([
      ['demo-us-1', 'managed', 'us'],
      ['demo-us-2', 'managed', 'us'],
      ['demo-eu-1', 'managed', 'eu'],
      ['demo-external', 'external', 'local'],
      ['demo-socks', 'external', 'local'],
    ]);
    expect(fleet.map((p) => (p.spec.endpoint as { protocol?: string } | undefined)?.protocol)).toEqual([
      undefined,
      undefined,
      undefined,
      'http',
      'socks5',
    ]);
    expect(new Set(fleet.filter((p) => p.spec.mode === 'managed').map((p) => p.spec.zone)).size).toBe(3);
    expect(
      fleet.every((p) => (p.spec.credentialsRef as { secret: string }).secret === 'demo-proxy-credentials'),
    ).toBe(true);
    // The managed VMs' squid lets CONNECT reach 443 only unless told: the demo lists the HTTPS site's
    // port (the printed gateway curl tunnels to it); the API's port (the local BASIC probe's handshake)
    // the local plane's Compute emulator allows to every VM, listed or not.
    expect(fleet.filter((p) => p.spec.mode === 'managed').map((p) => p.spec.connectPorts)).toEqual([
      [443, 18321],
      [443, 18321],
      [443, 18321],
    ]);
    expect(fleet.filter((p) => p.spec.mode === 'external').every((p) => !('connectPorts' in p.spec))).toBe(
      true,
    );
    // What the admin API accepts (the same schemas): a demo that failed validation would greet a newcomer with a 400.
    for (const p of fleet) {
      expect(ProxyName.safeParse(p.name).success).toBe(true);
      expect(ProxySpec.safeParse(p.spec).error).toBeUndefined();
    }
  });
});
