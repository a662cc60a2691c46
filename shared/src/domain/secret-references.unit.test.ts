import { describe, expect, it } from 'vitest';
import { emptyStatus, type ProxyResource, ProxySpec } from './proxy.js';
import {
  proxiesForSecret,
  proxiesForSecretChange,
  refAffected,
  type SecretChange,
} from './secret-references.js';

const proxy = (name: string, spec: unknown, deleting = false): ProxyResource => ({
  name,
  uid: '00000000-0000-4000-8000-000000000000',
  generation: 1,
  createdAt: new Date(0),
  deletionRequestedAt: deleting ? new Date(0) : null,
  spec: ProxySpec.parse(spec),
  status: emptyStatus(),
});
const managed = { mode: 'managed', zone: 'us-central1-a' };

describe('proxiesForSecret (seed §1 Secret watch)', () => {
  const fleet = [
    proxy('creds', { ...managed, credentialsRef: { secret: 's1' } }),
    proxy('init', { ...managed, cloudInit: { secretRef: { secret: 's1' } } }),
    proxy('inline', { ...managed, cloudInit: { inline: 's1' } }),
    proxy('ext', { mode: 'external', endpoint: { host: 'h', port: 1 }, credentialsRef: { secret: 's1' } }),
    proxy('other', { ...managed, credentialsRef: { secret: 's2' } }),
    proxy('going', { ...managed, credentialsRef: { secret: 's1' } }, true),
  ];
  it('finds every proxy whose credentials or cloud-init reference the secret, and nothing else', () => {
    expect(proxiesForSecret(fleet, 's1')).toEqual(['creds', 'init', 'ext']);
    expect(proxiesForSecret(fleet, 's2')).toEqual(['other']);
    expect(proxiesForSecret(fleet, 'nope')).toEqual([]);
  });
});

describe('refAffected: which references resolve differently after a change', () => {
  // A version added, or one enabled, disabled or destroyed: what moves depends on the version alone.
  const added = (version: string): SecretChange => ({ secret: 's', version });
  const changed = (version: string | null): SecretChange => ({ secret: 's', version });
  it.each<[string, { secret: string; version: string }, SecretChange, boolean]>([
    ['a new version moves latest', { secret: 's', version: 'latest' }, added('4'), true],
    ['a new version leaves a pinned reference', { secret: 's', version: '3' }, added('4'), false],
    // Pinned before it existed, the reference could not be read: it resolves now.
    ['a new version moves a reference pinned to it', { secret: 's', version: '4' }, added('4'), true],
    ['disabling the pinned version affects it', { secret: 's', version: '3' }, changed('3'), true],
    ['disabling another version does not', { secret: 's', version: '3' }, changed('2'), false],
    ['disabling any version may move latest', { secret: 's', version: 'latest' }, changed('2'), true],
    ['a whole-secret change affects pinned references', { secret: 's', version: '3' }, changed(null), true],
    ['another secret is never affected', { secret: 't', version: 'latest' }, changed(null), false],
  ])('%s', (_n, ref, change, expected) => {
    expect(refAffected(ref, change)).toBe(expected);
  });

  it('re-enqueues a proxy once even when both of its references name the secret', () => {
    const both = proxy('both', {
      ...managed,
      credentialsRef: { secret: 's' },
      cloudInit: { secretRef: { secret: 's', version: '2' } },
    });
    const pinned = proxy('pinned', { ...managed, credentialsRef: { secret: 's', version: '2' } });
    expect(proxiesForSecretChange([both, pinned], added('3'))).toEqual(['both']);
    expect(proxiesForSecretChange([both, pinned], changed('2'))).toEqual(['both', 'pinned']);
  });
});

describe('the version an instance still serves mid-rotation (status.servedCredentials)', () => {
  it('counts as a reference: disabling it re-enqueues the proxy, whatever its spec names now', () => {
    const moved = {
      ...proxy('moved', { ...managed, credentialsRef: { secret: 'new-creds' } }),
      status: { ...emptyStatus(), servedCredentials: { secret: 'old-creds', version: '4' } },
    };
    const disabled = (version: string): SecretChange => ({ secret: 'old-creds', version });
    expect(proxiesForSecretChange([moved], disabled('4'))).toEqual(['moved']);
    expect(proxiesForSecretChange([moved], disabled('3'))).toEqual([]);
    expect(proxiesForSecretChange([moved], { secret: 'old-creds', version: '5' })).toEqual([]);
  });
});
