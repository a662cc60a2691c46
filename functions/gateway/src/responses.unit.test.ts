import { describe, expect, it } from 'vitest';
import { detailHeaders, errorResponse } from './responses.js';

describe('detailHeaders', () => {
  it("says a refusal's codes and numbers in headers of their own", () => {
    expect(detailHeaders({ error: 'ssrf_refused', reason: 'loopback' })).toEqual({
      'X-Proxyplane-Reason': 'loopback',
    });
    expect(detailHeaders({ error: 'upstream_refused', upstreamStatus: 403 })).toEqual({
      'X-Proxyplane-Upstream-Status': '403',
    });
    expect(detailHeaders({ socksReply: 5 })).toEqual({ 'X-Proxyplane-Socks-Reply': '5' });
    expect(detailHeaders({ error: 'no_route' })).toEqual({});
  });

  it('leaves anything that is not a plain token to the body: no header injection, nothing Node refuses', () => {
    for (const reason of ['a\r\nSet-Cookie: x=1', 'two words', '€', '', 'x'.repeat(101)]) {
      expect(detailHeaders({ reason })).toEqual({});
      expect(errorResponse(502, 'target_failed', { reason })).not.toContain('X-Proxyplane-Reason');
    }
  });
});
