// The plane's own gateway must always be able to register: with a developer's WORKER_TOKENS (for a gateway
// of their own beside it) or GATEWAY_SERVICE_ACCOUNT set, it used to start with no token and fall back to
// a Google identity token, which fails offline — registered never, it carried none of the demo pool.
import { describe, expect, it } from 'vitest';
import { parseWorkerTokens } from '../../functions/api/src/workers/config.js';
import { planeWorkerTokens } from './local-tokens.js';

const worker = { id: 'gw-local', token: 'plane-token-0123456789abcdef' };

describe('planeWorkerTokens', () => {
  it("without the developer's own: the plane's worker alone", () => {
    expect(planeWorkerTokens(undefined, worker)).toEqual({
      api: 'gw-local:plane-token-0123456789abcdef',
      gateway: worker.token,
    });
  });

  it("with the developer's own: theirs kept, the plane's added, and the API accepts the list", () => {
    const t = planeWorkerTokens(' gw-1:dev-token-0123456789abcdef ,', worker);
    expect(t.gateway).toBe(worker.token);
    expect(parseWorkerTokens(t.api)).toEqual([
      { workerId: 'gw-1', token: 'dev-token-0123456789abcdef' },
      { workerId: 'gw-local', token: worker.token },
    ]);
  });

  it("a list that names the plane worker itself is left as it is, and the gateway gets that entry's token", () => {
    expect(planeWorkerTokens('gw-1:a-0123456789abcdef, gw-local:dev-token-0123456789abcdef', worker)).toEqual(
      {
        gateway: 'dev-token-0123456789abcdef',
      },
    );
  });
});
