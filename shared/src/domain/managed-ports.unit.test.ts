import { describe, expect, it } from 'vitest';
import { externalSpec, managedSpec } from '../testing/proxy-fixtures.js';
import { type ManagedPortPolicy, refusedManagedPort } from './managed-ports.js';
import type { ProxySpec } from './proxy.js';

const onPort = (port: number) => managedSpec({ port });
const external = (port: number) => externalSpec({ endpoint: { host: '203.0.113.7', port } });

describe('refusedManagedPort', () => {
  it.each<[string, ProxySpec, ManagedPortPolicy, ProxySpec | undefined, number | null]>([
    ['managed, the default port, allowed', managedSpec(), [3128], undefined, null],
    ['managed, one of several allowed', onPort(8080), [3128, 8080], undefined, null],
    ['managed, a port not allowed', onPort(8080), [3128], undefined, 8080],
    ['managed, the default port when only another is allowed', managedSpec(), [8080], undefined, 3128],
    ['managed, any port when unset', onPort(65535), null, undefined, null],
    ['managed, port 1 when unset', onPort(1), null, undefined, null],
    ['external, a port not in the list', external(8080), [3128], undefined, null],
    ['external, port 1', external(1), [3128], undefined, null],
    ['external, unset', external(9999), null, undefined, null],
    ['update to a port not allowed', onPort(8080), [3128], managedSpec(), 8080],
    ['update to an allowed port from one not allowed (the fix)', onPort(3128), [3128], onPort(8080), null],
    ['update that keeps a port stored before the policy', onPort(8080), [3128], onPort(8080), null],
    ['update from one disallowed port to another', onPort(9090), [3128], onPort(8080), 9090],
    ['update of an external proxy', external(1), [3128], external(2), null],
  ])('%s', (_name, next, allowed, current, refused) => {
    expect(refusedManagedPort(next, allowed, current)).toBe(refused);
  });

  it('an empty list allows no managed port at all (the config loader never produces one)', () => {
    expect(refusedManagedPort(managedSpec(), [], undefined)).toBe(3128);
  });
});
