// A long CONNECT tunnel through the standalone gateway carries tens of MiB byte-exact in both directions
// at once and is let go cleanly: the relay is a plain pipe both ways, and the process starts with the malloc
// trim threshold raised (malloc-thresholds.ts) so the read buffers freed at every GC are reused rather
// than returned to the kernel. Speed is measured by bench/gateway.ts (tput), never here.
import { createHash } from 'node:crypto';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  basicAuth,
  type GatewayProcess,
  openTunnel,
  startGateway,
} from '../../bench/support/gateway-process.js';
import { snapshotFile } from '../../bench/support/snapshot-file.js';
import { createForwardProxy, type ForwardProxy } from '../../emulators/forward-proxy/proxy.js';
import { pollUntil } from '../support/poll.js';

const MIB = 1024 * 1024;
const DOWN = 48 * MIB;
const UP = 16 * MIB;
const AUTH = basicAuth('crawler', 's3cret');

/** Deterministic, non-repeating-per-chunk bytes: a reordered or dropped chunk changes the digest. */
function pattern(total: number, seed: number): Buffer[] {
  const chunks: Buffer[] = [];
  for (let off = 0, n = 0; off < total; off += 256 * 1024, n++) {
    const c = Buffer.alloc(Math.min(256 * 1024, total - off));
    for (let i = 0; i < c.length; i += 4)
      c.writeUInt32LE(((off + i) ^ Math.imul(seed, 0x9e3779b1) ^ n) >>> 0, i);
    chunks.push(c);
  }
  return chunks;
}
const digest = (chunks: Buffer[]) => {
  const h = createHash('sha256');
  for (const c of chunks) h.update(c);
  return h.digest('hex');
};

/** Writes all chunks honouring back-pressure (the socket stays open: no half-close is relied on). */
async function send(s: net.Socket, chunks: Buffer[]): Promise<void> {
  for (const c of chunks) if (!s.write(c)) await new Promise((r) => s.once('drain', r));
}

/** Hashes what arrives until `expected` bytes did (or the peer ended or closed early). */
function receive(s: net.Socket, expected: number): Promise<{ bytes: number; sha: string }> {
  return new Promise((resolve, reject) => {
    const h = createHash('sha256');
    let bytes = 0;
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      resolve({ bytes, sha: h.digest('hex') });
    };
    s.on('data', (c: Buffer) => {
      bytes += c.length;
      h.update(c);
      if (bytes >= expected) finish();
    });
    s.on('end', finish);
    s.on('close', finish);
    s.on('error', reject);
    s.resume();
  });
}

describe('gateway CONNECT tunnel, bulk transfer', () => {
  let upstream: ForwardProxy;
  let target: net.Server;
  let targetPort = 0;
  let gw: GatewayProcess;
  const downChunks = pattern(DOWN, 1);
  const upChunks = pattern(UP, 2);
  let targetGot: Promise<{ bytes: number; sha: string }>;

  beforeAll(async () => {
    // The target sends DOWN bytes and hashes what it receives, both at once.
    target = net.createServer((s) => {
      s.on('error', () => {});
      targetGot = receive(s, UP);
      void send(s, downChunks);
    });
    await new Promise<void>((r) => target.listen(0, '127.0.0.1', r));
    targetPort = (target.address() as net.AddressInfo).port;
    upstream = createForwardProxy({ credentials: 'up:up-pass' });
    const { port } = await upstream.listen();
    gw = await startGateway(snapshotFile({ upstreams: [`http://up:up-pass@127.0.0.1:${port}`] }), {
      GATEWAY_CLIENT_USERS: 'crawler:s3cret',
      GATEWAY_SSRF_ALLOW: `127.0.0.1:${targetPort}`,
    });
  });

  afterAll(async () => {
    await gw?.stop();
    await upstream?.close();
    await new Promise((r) => target?.close(r));
  });

  it('relays 48 MiB down and 16 MiB up at once, byte-exact, and lets both legs go', async () => {
    const s = await openTunnel(gw.proxyPort, `127.0.0.1:${targetPort}`, AUTH);
    const got = receive(s, DOWN);
    await send(s, upChunks);
    expect(await got).toEqual({ bytes: DOWN, sha: digest(downChunks) });
    expect(await targetGot).toEqual({ bytes: UP, sha: digest(upChunks) });
    s.destroy();
    const idle = await pollUntil(
      () => gw.health(),
      (h) => h.sockets.proxyClients === 0 && h.sockets.upstreams === 0,
      10_000,
      'both legs of the tunnel to be let go',
    );
    expect(idle.sockets).toMatchObject({ proxyClients: 0, upstreams: 0 });
  }, 30_000);
});
