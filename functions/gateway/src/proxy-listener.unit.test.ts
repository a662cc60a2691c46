// The listener's deadline sweep runs on the monotonic clock: a wall clock stepped forward (NTP, a host
// migration) timed out every session at once — in DIAL or HANDSHAKE each a failure recorded against its
// proxy, across the fleet — and one stepped back stretched every bound by the size of the step.
import { once } from 'node:events';
import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { PreAuthGate } from './pre-auth-gate.js';
import { createProxyListener, type ProxyListener } from './proxy-listener.js';
import { newSocketCounts } from './sockets.js';

let listener: ProxyListener | undefined;
afterEach(async () => {
  vi.restoreAllMocks();
  listener?.destroyAll();
  await listener?.stopAccepting();
});

describe('the proxy listener deadline sweep', () => {
  it('a wall clock stepped an hour forward times nothing out', async () => {
    listener = createProxyListener(
      {
        worker: { grantOver: false, expiredProxies: new Set() },
        recorder: { request: () => {} },
        sockets: newSocketCounts(),
        preAuth: new PreAuthGate(10),
      } as never,
      {
        maxHeaderBytes: 8192,
        headerTimeoutMs: 5_000,
        upstreamTimeoutMs: 5_000,
        idleTimeoutMs: 5_000,
        lingerMs: 5_000,
        maxConnections: 10,
      },
      () => {},
    );
    const port = await listener.listen(0, '127.0.0.1');
    const client = net.connect(port, '127.0.0.1');
    await once(client, 'connect');
    const received: Buffer[] = [];
    client.on('data', (d: Buffer) => received.push(d));
    // Half a head: the session waits for the rest until GATEWAY_HEADER_TIMEOUT_MS (5 s here).
    client.write('CONNECT 127.0.0.1:443 HTTP/1.1\r\n');
    await sleep(50);
    vi.spyOn(Date, 'now').mockReturnValue(Date.now() + 3_600_000);
    await sleep(700); // the sweep runs every 250 ms
    expect(Buffer.concat(received).toString()).toBe('');
    expect(client.destroyed).toBe(false);
    client.destroy();
  });
});
