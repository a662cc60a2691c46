// Where a lease was granted, and whether its proxy has moved since (a renewal is refused then).
import { describe, expect, it } from 'vitest';
import type { ProxyResource } from '../proxy.js';
import { endpointKey, listensElsewhere } from './endpoint.js';
import { proxy } from './fixtures.unit.js';

const withIp = (p: ProxyResource, ip: string | null): ProxyResource => ({
  ...p,
  status: { ...p.status, ip },
});

describe('endpointKey', () => {
  it.each([
    [{ host: '203.0.113.7', port: 3128, protocol: 'http' as const }, 'http://203.0.113.7:3128'],
    [{ host: '2001:db8::1', port: 1080, protocol: 'socks5' as const }, 'socks5://[2001:db8::1]:1080'],
    [{ host: 'proxy.example', port: 8080, protocol: 'http' as const }, 'http://proxy.example:8080'],
  ])('%o → %s', (endpoint, key) => {
    expect(endpointKey(endpoint)).toBe(key);
  });
});

describe('listensElsewhere', () => {
  const vm = proxy('vm');
  const granted = 'http://10.0.0.1:3128';

  it('a managed proxy on the address it was granted on has not moved', () => {
    expect(
      endpointKey({
        host: '10.0.0.1',
        port: vm.spec.mode === 'managed' ? vm.spec.port : 0,
        protocol: 'http',
      }),
    ).toBe(granted);
    expect(listensElsewhere(granted, vm)).toBe(false);
  });

  it('its VM re-created on another address has', () => {
    expect(listensElsewhere(granted, withIp(vm, '10.0.0.2'))).toBe(true);
  });

  it('no address yet (the VM being re-created) is no move', () => {
    expect(listensElsewhere(granted, withIp(vm, null))).toBe(false);
  });

  it('an external endpoint edited to another host, port or protocol has moved', () => {
    const ext = proxy('ext', { external: true });
    expect(listensElsewhere('http://proxy.example:8080', ext)).toBe(false);
    expect(listensElsewhere('http://proxy.example:8081', ext)).toBe(true);
    expect(listensElsewhere('socks5://proxy.example:8080', ext)).toBe(true);
    expect(listensElsewhere('http://other.example:8080', ext)).toBe(true);
  });

  it('a lease stored before endpoints were recorded is never taken for moved', () => {
    expect(listensElsewhere(null, withIp(vm, '10.0.0.2'))).toBe(false);
  });
});
