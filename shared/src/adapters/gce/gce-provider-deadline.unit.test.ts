// The real @google-cloud/compute client over REST ignores a call's deadline (its `timeout` option and the
// method's 600 s default alike): against a server that accepts the connection and never answers, only
// the provider's own per-attempt deadline ends the call. No emulator: a silent socket is the whole fixture.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ProviderError } from '../../ports/provider.js';
import { makeGceProvider } from './clients.js';

describe('gce provider against a compute endpoint that never answers', () => {
  const held: http.ServerResponse[] = [];
  /** Answers (404) until the client has made its first call, which loads what the client loads lazily. */
  let warming = true;
  const server = http.createServer((_req, res) => {
    if (warming) {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { code: 404, message: 'warming up' } }));
      return;
    }
    held.push(res); // accepted, never answered
  });
  let endpoint = '';

  beforeAll(async () => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    endpoint = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    for (const res of held) res.destroy();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('gives up on each attempt at its deadline and fails transient, instead of hanging', async () => {
    const gce = makeGceProvider({
      project: 'p',
      computeEndpoint: endpoint,
      retry: { attempts: 2, baseMs: 1, maxMs: 1, attemptTimeoutMs: 150 },
    });
    try {
      // A client's first call loads modules on the way (a few hundred ms on a loaded machine), which
      // would count against the first attempt's 150 ms: not what this test measures. A client of its
      // own, without the deadline, loads them first.
      const warm = makeGceProvider({
        project: 'p',
        computeEndpoint: endpoint,
        retry: { attempts: 1, baseMs: 1, maxMs: 1, attemptTimeoutMs: 30_000 },
      });
      expect(await warm.provider.get('zones/us-central1-a/instances/pp-warm')).toBeNull();
      await warm.close();
      warming = false;
      const err = await gce.provider.get('zones/us-central1-a/instances/pp-0123').catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ProviderError);
      expect(err).toMatchObject({ kind: 'transient' });
      // Both attempts reached the server — the second maybe only after its deadline, on a worker that
      // stalled in between (a given-up request is still sent): polled, not read at the rejection.
      await expect.poll(() => held.length).toBe(2);
    } finally {
      await gce.close();
    }
  }, 30_000);
});
