// An absolute-form fetch that reaches the upstream pool after the drain's cut (its look-up came back late)
// is the gateway's own shutdown, not the proxy's failure: it settles `shutting_down`, which fetch-through.ts
// neither records against the proxy nor redials, where a dial refused reads `upstream_dial_failed`.
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Upstream } from '../../../shared/src/domain/gateway/routing.js';
import type { UpstreamAuth } from './compile.js';
import { fetchAbsolute } from './fetch-absolute.js';
import { newSocketCounts } from './sockets.js';
import { UpstreamPool } from './upstream-pool.js';

/** An upstream without credentials of its own at host:port. */
const upstreamAt = (host: string, port: number) =>
  ({ host, port, auth: { authorization: undefined } as unknown as UpstreamAuth }) as Upstream<UpstreamAuth>;

const GET_TARGET = {
  url: 'http://target.test/',
  method: 'GET',
  headers: { host: 'target.test' },
  body: undefined,
};

describe('fetchAbsolute through a destroyed pool', () => {
  let accepted = 0;
  const upstream = net.createServer((s) => {
    accepted++;
    s.destroy();
  });
  let port = 0;

  beforeAll(async () => {
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    port = (upstream.address() as AddressInfo).port;
  });

  afterAll(async () => {
    await new Promise((r) => upstream.close(r));
  });

  it('settles shutting_down and opens no connection', async () => {
    const pool = new UpstreamPool(newSocketCounts(), { idleMs: 60_000, maxIdlePerUpstream: 4 });
    pool.destroy();
    const r = await fetchAbsolute(upstreamAt('127.0.0.1', port), pool, {
      ...GET_TARGET,
      timeoutMs: 5_000,
      onConnected: () => {},
    });
    expect(r).toMatchObject({ ok: false, stage: 'DIAL', status: 503, code: 'shutting_down' });
    expect(accepted).toBe(0);
  });
});

describe('fetchAbsolute to an upstream whose connect never completes', () => {
  it('gives up at dialTimeoutMs: a DIAL failure, upstream_timeout, well before the fetch deadline', async () => {
    // A stopped VM drops SYNs: nothing refuses, the connect just never completes. Here the socket waits
    // for ever on its address look-up (a lookup that never answers), still "connecting".
    let opened = 0;
    const sockets: net.Socket[] = [];
    const agent = new http.Agent();
    agent.createConnection = () => {
      opened++;
      const s = net.connect({ host: 'upstream.test', port: 3128, lookup: () => {} });
      sockets.push(s);
      return s;
    };
    const pool = { agentFor: () => agent, fresh: agent, dropIdle: () => {} } as unknown as UpstreamPool;
    let connected = false;
    const r = await fetchAbsolute(upstreamAt('upstream.test', 3128), pool, {
      ...GET_TARGET,
      timeoutMs: 60_000,
      dialTimeoutMs: 50,
      onConnected: () => {
        connected = true;
      },
    });
    expect(r).toMatchObject({ ok: false, stage: 'DIAL', status: 504, code: 'upstream_timeout' });
    expect(connected).toBe(false);
    expect(opened).toBe(1);
    await new Promise((resolve) => setImmediate(resolve));
    expect(sockets.every((s) => s.destroyed)).toBe(true);
    agent.destroy();
  });
});

describe('fetchAbsolute on a pooled connection the upstream dropped', () => {
  // Answers the first request on a connection and keeps it alive; destroys it at the second, unanswered.
  let connections = 0;
  const upstream = net.createServer((s) => {
    connections++;
    let served = 0;
    s.on('error', () => {});
    s.on('data', () => {
      if (served++ === 0) s.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok');
      else s.destroy();
    });
  });
  let port = 0;

  beforeAll(async () => {
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    port = (upstream.address() as AddressInfo).port;
  });

  afterAll(async () => {
    await new Promise((r) => upstream.close(r));
  });

  it('retries a lowercase "get" (a GET on the wire) once, on one fresh connection: 200', async () => {
    // A case-sensitive check left "get" unretried: 502 target_failed, blamed on a healthy proxy.
    const pool = new UpstreamPool(newSocketCounts(), { idleMs: 60_000, maxIdlePerUpstream: 4 });
    const fetch = () =>
      fetchAbsolute(upstreamAt('127.0.0.1', port), pool, {
        ...GET_TARGET,
        method: 'get',
        timeoutMs: 5_000,
        onConnected: () => {},
      });
    try {
      const first = await fetch();
      if (!first.ok) throw new Error(`first fetch failed: ${first.status} ${first.code}`);
      first.response.resume();
      await new Promise((r) => first.response.once('end', r));
      first.done();
      await new Promise((r) => setTimeout(r, 50));
      expect(pool.idleCount()).toBe(1);
      const second = await fetch();
      expect(second).toMatchObject({ ok: true });
      if (!second.ok) return;
      expect(second.response.statusCode).toBe(200);
      second.response.resume();
      second.done();
      expect(connections).toBe(2);
    } finally {
      pool.destroy();
    }
  });
});

describe('fetchAbsolute answered a 101 without Connection: upgrade', () => {
  it('settles a RESPONSE_HEADERS failure and pools nothing: Node took it for a whole keep-alive answer', async () => {
    // As squid 3.2–4 forwards a target's 101, hop-by-hop fields dropped; then the target's next answer on
    // the same connection, which a pooled connection would hand to the next request.
    const upstream = net.createServer((s) => {
      s.once('data', () => {
        s.write('HTTP/1.1 101 Switching Protocols\r\n\r\n');
        s.once('data', () => s.write('HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nleaked'));
      });
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    const pool = new UpstreamPool(newSocketCounts(), { idleMs: 60_000, maxIdlePerUpstream: 4 });
    try {
      const r = await fetchAbsolute(upstreamAt('127.0.0.1', (upstream.address() as AddressInfo).port), pool, {
        ...GET_TARGET,
        timeoutMs: 5_000,
        onConnected: () => {},
      });
      expect(r).toMatchObject({
        ok: false,
        stage: 'RESPONSE_HEADERS',
        status: 502,
        code: 'target_bad_response',
      });
      await new Promise((res) => setTimeout(res, 50));
      expect(pool.idleCount()).toBe(0);
    } finally {
      pool.destroy();
      await new Promise((r) => upstream.close(r));
    }
  });
});
