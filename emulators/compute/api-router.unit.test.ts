import { describe, expect, it } from 'vitest';
import { matchApiRoute } from './api-router.js';

describe('matchApiRoute', () => {
  it.each([
    ['POST', '/compute/v1/projects/p/zones/z/instances', 'insert', ['p', 'z']],
    ['GET', '/compute/v1/projects/p/zones/z/instances', 'list', ['p', 'z']],
    ['GET', '/compute/v1/projects/p/zones/z/instances/vm', 'get', ['p', 'z', 'vm']],
    ['DELETE', '/compute/v1/projects/p/zones/z/instances/vm', 'delete', ['p', 'z', 'vm']],
    ['POST', '/compute/v1/projects/p/zones/z/instances/vm/stop', 'stop', ['p', 'z', 'vm']],
    ['POST', '/compute/v1/projects/p/zones/z/instances/vm/start', 'start', ['p', 'z', 'vm']],
    ['GET', '/compute/v1/projects/p/aggregated/instances', 'aggregatedList', ['p']],
    ['GET', '/compute/v1/projects/p/zones/z/operations', 'operationsList', ['p', 'z']],
    ['GET', '/compute/v1/projects/p/zones/z/operations/op-1', 'operationsGet', ['p', 'z', 'op-1']],
    ['POST', '/compute/v1/projects/p/zones/z/operations/op-1/wait', 'operationsWait', ['p', 'z', 'op-1']],
    ['GET', '/compute/v1/projects/my%2Dp/zones/z/instances', 'list', ['my-p', 'z']],
  ])('%s %s → %s', (method, path, operation, params) => {
    expect(matchApiRoute(method, path)).toEqual({ kind: 'ok', operation, params });
  });

  it('knows a wrong method from an unknown path', () => {
    expect(matchApiRoute('PUT', '/compute/v1/projects/p/zones/z/instances/vm')).toEqual({
      kind: 'method',
      allowed: ['GET', 'DELETE'],
    });
    expect(matchApiRoute('GET', '/compute/v1/projects/p/zones/z/disks')).toEqual({ kind: 'none' });
    expect(matchApiRoute('GET', '/compute/v1/projects/p/zones/z/instances/a/b/c')).toEqual({ kind: 'none' });
  });
});
