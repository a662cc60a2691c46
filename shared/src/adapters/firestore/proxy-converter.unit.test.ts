// Reading a stored proxy that a newer release wrote: the spec schema is strict (the API refuses an unknown
// field), but a document may carry a field added after this release — every spec a release writes has its
// defaulted fields. Refused whole, the proxy dropped out of reconcile, the snapshot and the API for the
// length of a rolling upgrade; read without the field, it is the proxy this release knows.
import { describe, expect, it } from 'vitest';
import { ZodError } from 'zod';
import { aProxy, managedSpec } from '../../testing/proxy-fixtures.js';
import { proxyFromFirestore, proxyToFirestore } from './proxy-converter.js';

const proxy = aProxy({
  name: 'edge-1',
  spec: managedSpec({ healthCheck: { url: 'http://example.com/', intervalSeconds: 60 } }),
});
const stored = (spec: Record<string, unknown>) => ({ ...proxyToFirestore(proxy), spec });
const storedSpec = () => proxyToFirestore(proxy).spec as Record<string, unknown>;

describe('proxyFromFirestore: fields a newer release added', () => {
  it('reads a spec with an unknown field as the spec without it', () => {
    const read = proxyFromFirestore(stored({ ...storedSpec(), drainSeconds: 30 }), 'edge-1');
    expect(read.spec).toEqual(proxy.spec);
    expect(read.spec).not.toHaveProperty('drainSeconds');
  });

  it('reads unknown fields away at any depth of the spec, several at once', () => {
    const spec = storedSpec();
    const healthCheck = { ...(spec.healthCheck as Record<string, unknown>), tier: 'deep' };
    const read = proxyFromFirestore(stored({ ...spec, healthCheck, drainSeconds: 30, weight: 2 }), 'edge-1');
    expect(read.spec).toEqual(proxy.spec);
  });

  it('still refuses a document with another problem beside an unknown field', () => {
    expect(() =>
      proxyFromFirestore(stored({ ...storedSpec(), drainSeconds: 30, capacity: 'lots' }), 'edge-1'),
    ).toThrow(ZodError);
  });

  it('still refuses a spec of a mode it does not know', () => {
    expect(() => proxyFromFirestore(stored({ ...storedSpec(), mode: 'pooled' }), 'edge-1')).toThrow(ZodError);
  });
});
