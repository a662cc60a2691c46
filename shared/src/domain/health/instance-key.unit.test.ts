import { describe, expect, it } from 'vitest';
import { aProxy, externalSpec } from '../../testing/proxy-fixtures.js';
import type { Condition } from '../proxy.js';
import { healthInstanceKey } from './instance-key.js';

const providerId = 'zones/us-central1-a/instances/pp-0123456789abcdef0123';
const t1 = new Date('2026-03-01T10:00:00Z');
const t2 = new Date('2026-03-01T11:30:00.250Z');
const provisioned = (status: Condition['status'], at: Date): Condition => ({
  type: 'Provisioned',
  status,
  reason: status === 'True' ? 'Created' : 'Provisioning',
  message: '',
  lastTransitionTime: at,
  observedGeneration: 1,
});
const managed = (conditions: Condition[], over: { providerId?: string | null; ip?: string | null } = {}) =>
  aProxy({ status: { providerId, ip: '10.0.0.9', conditions, ...over } });

describe('healthInstanceKey', () => {
  it.each<[string, ReturnType<typeof aProxy>, string]>([
    [
      'a running managed instance: providerId and when it turned Provisioned',
      managed([provisioned('True', t1)]),
      `${providerId}@2026-03-01T10:00:00.000Z`,
    ],
    [
      'the same name, a later incarnation',
      managed([provisioned('True', t2)]),
      `${providerId}@2026-03-01T11:30:00.250Z`,
    ],
    ['an instance not (yet) running: no key', managed([provisioned('False', t1)]), ''],
    ['no Provisioned condition (never seen running): no key', managed([]), ''],
    ['no instance: no key', managed([provisioned('True', t1)], { providerId: null, ip: null }), ''],
    [
      'an external proxy: the address the probe dials',
      aProxy({ uid: 'uid-e', spec: externalSpec(), status: { ip: '203.0.113.7' } }),
      '203.0.113.7:8080#uid-e',
    ],
    [
      'an external proxy before reconcile recorded the new host: still the old address',
      aProxy({
        uid: 'uid-e',
        spec: externalSpec({ endpoint: { host: '198.51.100.9', port: 8080 } }),
        status: { ip: '203.0.113.7' },
      }),
      '203.0.113.7:8080#uid-e',
    ],
    [
      'a SOCKS5 external proxy: the protocol is part of the key (the same address, another proxy)',
      aProxy({
        uid: 'uid-e',
        spec: externalSpec({ endpoint: { host: '203.0.113.7', port: 8080, protocol: 'socks5' } }),
        status: { ip: '203.0.113.7' },
      }),
      'socks5://203.0.113.7:8080#uid-e',
    ],
    ['an external proxy never reconciled: no key', aProxy({ spec: externalSpec() }), ''],
  ])('%s', (_l, proxy, key) => {
    expect(healthInstanceKey(proxy)).toBe(key);
  });

  it('is stable while the instance runs, and differs for each incarnation of the same name', () => {
    const first = managed([provisioned('True', t1)]);
    expect(healthInstanceKey({ ...first, status: { ...first.status, ip: '10.0.0.10' } })).toBe(
      healthInstanceKey(first),
    );
    expect(healthInstanceKey(managed([provisioned('True', t2)]))).not.toBe(healthInstanceKey(first));
  });

  it('differs for an external proxy created under the name and endpoint of a deleted one', () => {
    // health/{proxy} is keyed by name, and nothing prunes it when the name was gone between two ticks.
    const deleted = aProxy({ uid: 'uid-old', spec: externalSpec(), status: { ip: '203.0.113.7' } });
    const created = aProxy({ uid: 'uid-new', spec: externalSpec(), status: { ip: '203.0.113.7' } });
    expect(healthInstanceKey(created)).not.toBe(healthInstanceKey(deleted));
  });

  it('never collides with a key stored before incarnations were keyed (the bare providerId)', () => {
    // health/{proxy} written by an older probe holds `providerId`: it reads as another instance, so the
    // probe restarts the counters once and reconcile keeps the status as it is until the new verdict.
    expect(healthInstanceKey(managed([provisioned('True', t1)]))).not.toBe(providerId);
  });
});
