import { describe, expect, it } from 'vitest';
import { emptyStatus, type ProxyResource, ProxySpec } from './proxy.js';
import { proxiesForSecret } from './secret-references.js';

const proxy = (name: string, spec: unknown, deleting = false): ProxyResource => ({
  name,
  uid: '00000000-0000-4000-8000-000000000000',
  generation: 1,
  createdAt: new Date(0),
  deletionRequestedAt: deleting ? new Date(0) : null,
  spec: ProxySpec.parse(spec),
  status: emptyStatus(),
});

describe('proxiesForSecret (seed §1 Secret watch)', () => {
  const fleet = [
    proxy('creds', { mode: 'managed', zone: 'us-central1-a', credentialsRef: { secret: 's1' } }),
    proxy('init', { mode: 'managed', zone: 'us-central1-a', cloudInit: { secretRef: { secret: 's1' } } }),
    proxy('inline', { mode: 'managed', zone: 'us-central1-a', cloudInit: { inline: 's1' } }),
    proxy('ext', { mode: 'external', endpoint: { host: 'h', port: 1 }, credentialsRef: { secret: 's1' } }),
    proxy('other', { mode: 'managed', zone: 'us-central1-a', credentialsRef: { secret: 's2' } }),
    proxy('going', { mode: 'managed', zone: 'us-central1-a', credentialsRef: { secret: 's1' } }, true),
  ];
  it('finds every proxy whose credentials or cloud-init reference the secret, and nothing else', () => {
    expect(proxiesForSecret(fleet, 's1')).toEqual(['creds', 'init', 'ext']);
    expect(proxiesForSecret(fleet, 's2')).toEqual(['other']);
    expect(proxiesForSecret(fleet, 'nope')).toEqual([]);
  });
});
