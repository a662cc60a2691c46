import { describe, expect, it } from 'vitest';
import { externalSpec, managedSpec } from '../../../../shared/src/testing/proxy-fixtures.js';
import { ApiError } from '../errors.js';
import { mergeWith, replaceWith, sameSpec } from './spec-changes.js';

const codeOf = (fn: () => unknown) => {
  try {
    fn();
  } catch (err) {
    return err instanceof ApiError ? [err.status, err.code, err.extra.issues?.[0]?.path] : err;
  }
  return 'no error';
};

const errorOf = (fn: () => unknown) => {
  try {
    fn();
  } catch (err) {
    return err;
  }
  return null;
};

describe('replaceWith', () => {
  it.each([
    ['another zone', managedSpec({ zone: 'europe-west1-b' }), ['zone']],
    ['another provider', managedSpec({ provider: 'aws' }), ['provider']],
    ['both', managedSpec({ provider: 'aws', zone: 'europe-west1-b' }), ['provider', 'zone']],
  ])('refuses %s, one issue per field', (_name, next, paths) => {
    const err = errorOf(() => replaceWith(next)(managedSpec()));
    expect(err).toBeInstanceOf(ApiError);
    expect(err).toMatchObject({ status: 400, code: 'immutable_field' });
    expect((err as ApiError).extra.issues?.map((i) => i.path)).toEqual(paths);
  });

  it.each([
    ['machineType', managedSpec({ machineType: 'n2-standard-2' })],
    ['image', managedSpec({ image: 'projects/x/global/images/y' })],
    ['port', managedSpec({ port: 8080 })],
    ['capacity', managedSpec({ capacity: 9 })],
  ])('accepts a new %s (reconcile replaces the instance in place, or nothing at all)', (_f, next) => {
    expect(replaceWith(next)(managedSpec())).toBe(next);
  });

  it('leaves an external proxy free to move its endpoint', () => {
    const next = externalSpec({ endpoint: { host: 'other.example', port: 8080, protocol: 'http' } });
    expect(replaceWith(next)(externalSpec())).toBe(next);
  });

  it('returns the new spec of the same mode and refuses another mode', () => {
    const next = managedSpec({ capacity: 9 });
    expect(replaceWith(next)(managedSpec())).toBe(next);
    expect(codeOf(() => replaceWith(externalSpec())(managedSpec()))).toEqual([
      400,
      'immutable_field',
      'mode',
    ]);
  });
});

describe('mergeWith', () => {
  it.each([
    [{ capacity: 9 }, { capacity: 9 }],
    [
      { healthCheck: { url: 'https://example.com/' } },
      { healthCheck: expect.objectContaining({ url: 'https://example.com/', intervalSeconds: 30 }) },
    ],
    [{ cloudInit: { inline: '#cloud-config' } }, { cloudInit: { inline: '#cloud-config' } }],
    [{ credentialsRef: { secret: 'creds' } }, { credentialsRef: { secret: 'creds', version: 'latest' } }],
  ])('%j', (patch, expected) => {
    expect(mergeWith(patch)(managedSpec())).toMatchObject(expected);
  });

  it.each([
    ['the same zone spelled out', { zone: 'us-central1-a' }],
    ['provider removed (the default is the same gce)', { provider: null }],
  ])('accepts %s', (_name, patch) => {
    expect(mergeWith(patch)(managedSpec())).toMatchObject({ provider: 'gce', zone: 'us-central1-a' });
  });

  it('removes optional members with null and restores defaults for removed defaulted ones', () => {
    const current = managedSpec({ cloudInit: { inline: 'x' }, machineType: 'n2-standard-2' });
    const next = mergeWith({ cloudInit: null, machineType: null })(current);
    expect(next).not.toHaveProperty('cloudInit');
    expect(next).toMatchObject({ mode: 'managed', machineType: 'e2-small' });
  });

  it.each([
    [{ mode: 'external' }, [400, 'immutable_field', 'mode']],
    [{ zone: 'europe-west1-b' }, [400, 'immutable_field', 'zone']],
    [{ provider: 'aws' }, [400, 'immutable_field', 'provider']],
    [{ zone: 'nowhere' }, [400, 'invalid_request', 'zone']],
    [{ port: 70000 }, [400, 'invalid_request', 'port']],
    [{ extra: true }, [400, 'invalid_request', 'extra']],
  ])('refuses %j', (patch, expected) => {
    expect(codeOf(() => mergeWith(patch)(managedSpec()))).toEqual(expected);
  });
});

describe('sameSpec', () => {
  it('ignores key order and sees any value change', () => {
    const a = managedSpec({ attributes: { x: '1', y: '2' } });
    const b = { ...managedSpec({ attributes: { y: '2', x: '1' } }) };
    expect(sameSpec(a, b)).toBe(true);
    expect(sameSpec(a, managedSpec({ attributes: { x: '1', y: '3' } }))).toBe(false);
  });

  it('connectPorts: the same ports another way are the same spec; another port is a change', () => {
    const none = managedSpec();
    const ports = (connectPorts: number[]) => ({ ...none, connectPorts });
    expect(sameSpec(none, ports([443]))).toBe(true);
    expect(sameSpec(ports([8443]), ports([443, 8443, 8443]))).toBe(true);
    expect(sameSpec(ports([9443, 8443]), ports([8443, 9443]))).toBe(true);
    expect(sameSpec(none, ports([8443]))).toBe(false);
    expect(sameSpec(ports([8443]), ports([9443]))).toBe(false);
  });

  it('an exitIp of "proxy" spelt out is the same spec as none; "any" is a change', () => {
    const none = managedSpec();
    const spelt = { ...none, healthCheck: { ...none.healthCheck, exitIp: 'proxy' as const } };
    const any = { ...none, healthCheck: { ...none.healthCheck, exitIp: 'any' as const } };
    expect(sameSpec(none, spelt)).toBe(true);
    expect(sameSpec(spelt, none)).toBe(true);
    expect(sameSpec(none, any)).toBe(false);
    expect(sameSpec(spelt, any)).toBe(false);
  });
});
