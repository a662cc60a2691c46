// DELETE and GET of a proxy whose stored document does not fit the model, the store's get() standing in
// for Firestore's (InvalidStoredProxy); the documents themselves are test/integration's. What only the
// API decides: the answer, If-Match against a generation that may be unreadable, nothing written or
// published on a refusal.
import { describe, expect, it } from 'vitest';
import { InvalidStoredProxy } from '../../../../shared/src/ports/proxy-store.js';
import { aProxy } from '../../../../shared/src/testing/proxy-fixtures.js';
import { harness } from '../testing/harness.js';

const broken = (generation: number | null, deletionRequestedAt: Date | null = null, version = '1') =>
  new InvalidStoredProxy({
    name: 'edge-1',
    version,
    issues: [
      { path: 'spec.port', code: 'invalid_type', message: 'Invalid input: expected number, received string' },
    ],
    uid: 'uid-of-edge-1',
    generation,
    deletionRequestedAt,
  });

/** The harness with edge-1 stored (for the deletion write, at the version read) but read back as `err`. */
async function withBroken(err: InvalidStoredProxy) {
  const h = harness();
  await h.store.inner.create(aProxy({ name: 'edge-1' }));
  const { version } = (await h.store.inner.get('edge-1'))!;
  const { generation, deletionRequestedAt } = err.stored;
  h.store.interceptNext('get', () => {
    throw broken(generation, deletionRequestedAt, version);
  });
  return h;
}

describe('a stored document that does not fit the model', () => {
  it('GET: 500 stored_proxy_invalid with the fields, and what to do', async () => {
    const h = await withBroken(broken(3));
    const res = await h.call('GET', '/v1/proxies/edge-1');
    expect(res.status).toBe(500);
    const body = await res.json();
    expect(body).toMatchObject({
      error: 'stored_proxy_invalid',
      issues: [{ path: 'spec.port', code: 'invalid_type' }],
    });
    expect(body.message).toContain('DELETE /v1/proxies/edge-1');
  });

  it('DELETE: requested, published, answered with what could be read and no ETag', async () => {
    const h = await withBroken(broken(3));
    const res = await h.call('DELETE', '/v1/proxies/edge-1');
    expect(res.status).toBe(202);
    expect(res.headers.get('etag')).toBeNull();
    expect(await res.json()).toEqual({
      name: 'edge-1',
      uid: 'uid-of-edge-1',
      deletionRequestedAt: '2026-02-01T12:00:00.000Z',
      storedProxyInvalid: { issues: broken(3).stored.issues },
    });
    expect(h.store.writeCalls).toEqual([{ op: 'requestDeletion', name: 'edge-1' }]);
    expect(h.publisher.published).toEqual([{ proxy: 'edge-1', reason: 'delete-requested' }]);
  });

  it('DELETE of one already being deleted writes nothing and publishes again', async () => {
    const h = await withBroken(broken(3, new Date('2026-01-31T00:00:00Z')));
    const res = await h.call('DELETE', '/v1/proxies/edge-1');
    expect(res.status).toBe(202);
    expect((await res.json()).deletionRequestedAt).toBe('2026-01-31T00:00:00.000Z');
    expect(h.store.writeCalls).toEqual([]);
    expect(h.publisher.published).toEqual([{ proxy: 'edge-1', reason: 'delete-requested' }]);
  });

  it.each([
    ['"3.uid-of-edge-1"', 3, 202],
    ['"2.uid-of-edge-1"', 3, 412],
    ['"3.uid-of-another"', 3, 412],
    ['"3"', 3, 412],
    ['*', 3, 202],
    ['*', null, 202],
    ['"1.uid-of-edge-1"', null, 412],
  ])('DELETE with If-Match %s at generation %s: %s', async (ifMatch, generation, status) => {
    const h = await withBroken(broken(generation));
    const res = await h.call('DELETE', '/v1/proxies/edge-1', undefined, { 'if-match': ifMatch });
    expect(res.status).toBe(status);
    // Answered from the broken document, in one read and one write at its version.
    if (status === 202) {
      expect(await res.json()).toHaveProperty('storedProxyInvalid');
      expect(h.store.writeCalls).toEqual([{ op: 'requestDeletion', name: 'edge-1' }]);
    }
    if (status === 412) {
      expect(await res.json()).toMatchObject({
        error: 'precondition_failed',
        ...(generation === null ? {} : { generation }),
      });
      expect(h.store.writeCalls).toEqual([]);
      expect(h.publisher.published).toEqual([]);
    }
  });
});
