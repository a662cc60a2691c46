// A destroyed pool (the drain's cut) opens no connection again: not through an agent asked for anew, not
// through `fresh` (the retry after a pooled connection was dropped).
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newSocketCounts } from './sockets.js';
import { UpstreamPool } from './upstream-pool.js';

describe('UpstreamPool after destroy()', () => {
  let accepted = 0;
  const upstream = http.createServer((_req, res) => res.end('ok'));
  upstream.on('connection', () => accepted++);
  let port = 0;

  beforeAll(async () => {
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    port = (upstream.address() as AddressInfo).port;
  });

  afterAll(async () => {
    upstream.closeAllConnections();
    await new Promise((r) => upstream.close(r));
  });

  /** One GET through `agent`: its status, or the kind of the error it failed with. */
  const get = (agent: http.Agent) =>
    new Promise<string>((resolve) => {
      const req = http.request({ host: '127.0.0.1', port, path: 'http://target.test/', agent }, (res) => {
        res.resume();
        res.on('end', () => resolve(String(res.statusCode)));
      });
      req.on('error', (err) => resolve((err as { kind?: string }).kind ?? String(err)));
      req.end();
    });

  it.each([
    ['an agent asked for after it', (p: UpstreamPool) => p.agentFor('127.0.0.1', port, '')],
    ['fresh', (p: UpstreamPool) => p.fresh],
  ])('%s refuses to connect', async (_, agentOf) => {
    const counts = newSocketCounts();
    const pool = new UpstreamPool(counts, { idleMs: 60_000, maxIdlePerUpstream: 4 });
    expect(await get(pool.agentFor('127.0.0.1', port, ''))).toBe('200');
    const before = accepted;
    pool.destroy();
    expect(await get(agentOf(pool))).toBe('upstream_pool_closed');
    expect(accepted).toBe(before);
    expect(pool.idleCount()).toBe(0);
  });
});

describe('UpstreamPool with maxIdlePerUpstream 0', () => {
  // Node's agent reads maxFreeSockets 0 as its default, 256: without keep-alive off, 0 kept them all.
  it('keeps no idle connection: each request still answered, its connection closed', async () => {
    const upstream = http.createServer((_req, res) => setTimeout(() => res.end('ok'), 50));
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    const { port } = upstream.address() as AddressInfo;
    const pool = new UpstreamPool(newSocketCounts(), { idleMs: 4000, maxIdlePerUpstream: 0 });
    try {
      const get = () =>
        new Promise<string>((resolve, reject) => {
          const agent = pool.agentFor('127.0.0.1', port, '');
          const req = http.request({ host: '127.0.0.1', port, path: 'http://target.test/', agent }, (res) => {
            let body = '';
            res.setEncoding('utf8');
            res.on('data', (c: string) => {
              body += c;
            });
            res.on('end', () => resolve(`${res.statusCode} ${body}`));
          });
          req.on('error', reject);
          req.end();
        });
      expect(await Promise.all(Array.from({ length: 5 }, get))).toEqual(Array(5).fill('200 ok'));
      // A socket freed at the response's end goes to the pool (or is destroyed) on a later tick.
      await new Promise((r) => setTimeout(r, 20));
      expect(pool.idleCount()).toBe(0);
    } finally {
      pool.destroy();
      upstream.closeAllConnections();
      await new Promise((r) => upstream.close(r));
    }
  });
});
