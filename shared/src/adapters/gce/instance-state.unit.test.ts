import { describe, expect, it } from 'vitest';
import { instanceState, observeInstance } from './instance-state.js';

describe('instanceState', () => {
  it.each([
    ['PROVISIONING', null, 'Provisioning'],
    ['STAGING', null, 'Provisioning'],
    ['RUNNING', null, 'Provisioning'],
    ['RUNNING', '34.1.2.3', 'Running'],
    ['REPAIRING', '34.1.2.3', 'Provisioning'],
    ['STOPPING', '34.1.2.3', 'Stopped'],
    ['STOPPED', null, 'Stopped'],
    ['SUSPENDED', null, 'Stopped'],
    ['TERMINATED', null, 'Terminated'],
    ['DEPROVISIONING', null, 'Stopped'],
    ['PENDING', null, 'Provisioning'],
  ])('%s with natIP %s → %s', (status, ip, state) => {
    expect(instanceState(status, ip)).toBe(state);
  });

  it('reads the zone-qualified id, the NAT address, the spec-hash label and what the VM serves', () => {
    const observed = observeInstance(
      {
        name: 'pp-1',
        zone: 'https://www.googleapis.com/compute/v1/projects/p/zones/us-east1-b',
        status: 'RUNNING',
        creationTimestamp: '2026-03-01T11:58:20.123-08:00',
        labels: { 'proxyplane-spec-hash': 'abc' },
        networkInterfaces: [{ networkIP: '10.0.0.2', accessConfigs: [{ natIP: '34.1.2.3' }] }],
        metadata: {
          items: [
            { key: 'startup-script', value: '#!/bin/sh' },
            { key: 'proxyplane-proxy-port', value: '3128' },
            { key: 'proxyplane-credentials-secret', value: 'projects/p/secrets/c/versions/7' },
          ],
        },
      },
      'ignored',
    );
    expect(observed).toEqual({
      providerId: 'zones/us-east1-b/instances/pp-1',
      state: 'Running',
      ip: '34.1.2.3',
      specHash: 'abc',
      serves: { port: 3128, credentialsSecret: 'projects/p/secrets/c/versions/7' },
      createdAt: new Date('2026-03-01T19:58:20.123Z'),
    });
    expect(observeInstance({ name: 'pp-2', status: 'RUNNING' }, 'us-east1-b').createdAt).toBeNull();
    // Without the metadata (a custom cloud-init reads no credentials reference): nothing to match.
    expect(observeInstance({ name: 'pp-2', status: 'RUNNING' }, 'us-east1-b').serves).toEqual({
      port: null,
      credentialsSecret: null,
    });
  });
});
