// A client that sends its request head a byte at a time (slowloris) resets the idle timer with every
// byte; only the head timeout bounds it. The proxy must answer 408 and let go of the connection.
import { once } from 'node:events';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createForwardProxy } from '../../emulators/forward-proxy/proxy.js';
import {
  type EchoTarget,
  eventually,
  requestViaProxy,
  startEchoTarget,
} from '../../emulators/forward-proxy/testing.js';

let target: EchoTarget;
beforeAll(async () => {
  target = await startEchoTarget();
});
afterAll(async () => {
  await target.close();
});

/** Opens a connection, sends the start of a request head, then one more header byte every 50 ms. */
async function trickle(port: number, host: string, path: string, timeoutMs: number) {
  const socket = connect(port, host);
  socket.on('error', () => {});
  let got = '';
  socket.on('data', (d: Buffer) => {
    got += d;
  });
  const closed = once(socket, 'close');
  socket.write(`GET ${target.url}${path} HTTP/1.1\r\nHost: x\r\nX-Slow: `);
  const drip = setInterval(() => {
    if (!socket.destroyed) socket.write('a');
  }, 50);
  const bound = setTimeout(() => socket.destroy(), timeoutMs);
  try {
    await closed;
  } finally {
    clearInterval(drip);
    clearTimeout(bound);
  }
  return got;
}

describe('a request head that never ends', () => {
  it('is answered 408 once headersTimeout has passed, however busy the client keeps the socket', async () => {
    const p = createForwardProxy({ headersTimeoutMs: 300, idleTimeoutMs: 10_000 });
    const a = await p.listen();
    try {
      // Bounded at 5 s: unanswered by then means the head timeout was never enforced.
      const got = await trickle(a.port, a.host, '/slow-head', 5_000);
      expect(got.split('\r\n')[0]).toBe('HTTP/1.1 408 Request Timeout');
      await eventually(() => p.openSockets() === 0, 'the connection to be released');
      expect(target.seen.some((s) => s.url === '/slow-head')).toBe(false);
      // Still serving complete requests.
      expect((await requestViaProxy(a, `${target.url}/after`)).status).toBe(200);
    } finally {
      await p.close();
    }
  });

  it('is bounded again after kill and revive', async () => {
    const p = createForwardProxy({ headersTimeoutMs: 300, idleTimeoutMs: 10_000 });
    const a = await p.listen();
    try {
      await p.kill();
      await p.revive();
      const got = await trickle(a.port, a.host, '/slow-head-revived', 5_000);
      expect(got.split('\r\n')[0]).toBe('HTTP/1.1 408 Request Timeout');
      await eventually(() => p.openSockets() === 0, 'the connection to be released');
    } finally {
      await p.close();
    }
  });
});
