import { describe, expect, it } from 'vitest';
import { harness } from '../testing/harness.js';
import type { AuthOutcome } from './authenticator.js';

const fixed = (outcome: AuthOutcome) => ({ description: 'fixed', authenticate: async () => outcome });

describe('requireAdmin on the admin routes', () => {
  it.each([
    [{ ok: false, code: 'unauthenticated', reason: 'invalid credential' } as const, 401, 'unauthenticated'],
    [{ ok: false, code: 'forbidden', reason: 'eve@example.com is not an admin' } as const, 403, 'forbidden'],
    [{ ok: false, code: 'unavailable', reason: 'cannot fetch certs' } as const, 503, 'unavailable'],
  ])('maps %j to %i %s and touches nothing', async (outcome, status, error) => {
    const h = harness({ auth: fixed(outcome) });
    const res = await h.call('POST', '/v1/proxies', {
      name: 'p1',
      spec: { mode: 'managed', zone: 'us-central1-a' },
    });
    expect(res.status).toBe(status);
    expect(await res.json()).toMatchObject({ error, message: outcome.reason });
    if (status === 401) expect(res.headers.get('www-authenticate')).toBe('Bearer realm="proxyplane"');
    if (status === 403) {
      expect(res.headers.get('www-authenticate')).toBe(
        'Bearer realm="proxyplane", error="insufficient_scope"',
      );
    }
    if (status === 503) expect(res.headers.get('retry-after')).toBe('5');
    expect(h.store.writeCalls).toEqual([]);
    expect(h.publisher.published).toEqual([]);
  });

  it('puts the principal in the request log', async () => {
    const h = harness({ auth: fixed({ ok: true, principal: { kind: 'google', email: 'ops@example.com' } }) });
    await h.call('GET', '/v1/proxies');
    expect(h.log.lines[0]).toMatchObject({ principal: 'ops@example.com' });
  });
});
