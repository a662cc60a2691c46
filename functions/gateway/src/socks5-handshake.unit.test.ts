import { once } from 'node:events';
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { socks5Handshake } from './socks5-handshake.js';
import { TunnelError } from './upstream-tunnel.js';

// A SOCKS5 upstream on loopback that answers the method offer and the CONNECT with the bytes given, each
// answer as the listed writes (a reply split across segments is several).
const servers: net.Server[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.close();
});

async function upstream(methodAnswer: number[][], connectAnswer: number[][]): Promise<number> {
  const server = net.createServer((s) => {
    let step = 0;
    s.on('data', async () => {
      const writes = step++ === 0 ? methodAnswer : connectAnswer;
      for (const w of writes) {
        s.write(Buffer.from(w));
        await new Promise((r) => setTimeout(r, 5));
      }
    });
    s.on('error', () => {});
  });
  servers.push(server);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return (server.address() as net.AddressInfo).port;
}

/** The handshake's outcome, and what the tunnel's first bytes were when it was granted. */
async function handshake(
  port: number,
  timeoutMs = 2000,
): Promise<{ error: TunnelError } | { first: string }> {
  const up = net.connect({ host: '127.0.0.1', port });
  await once(up, 'connect');
  up.on('error', () => {});
  try {
    await socks5Handshake(
      up,
      { host: '127.0.0.1', port, credentials: null },
      '93.184.216.34',
      443,
      timeoutMs,
    );
  } catch (e) {
    return { error: e as TunnelError };
  }
  up.resume();
  const [data] = (await once(up, 'data')) as [Buffer];
  up.destroy();
  return { first: data.toString('latin1') };
}

const IPV4_GRANTED = [0x05, 0x00, 0x00, 0x01, 1, 2, 3, 4, 0x01, 0xbb];
const HELLO = [...Buffer.from('HELLO')];

describe('socks5Handshake: the upstream’s replies', () => {
  it('a granted reply split across reads, then the target’s bytes: the tunnel starts with the target’s', async () => {
    const port = await upstream([[0x05], [0x00]], [IPV4_GRANTED.slice(0, 3), IPV4_GRANTED.slice(3), HELLO]);
    expect(await handshake(port)).toEqual({ first: 'HELLO' });
  });

  it('a host-name bound address (ATYP 0x03) in the same segment as the target’s bytes', async () => {
    const bound = [0x05, 0x00, 0x00, 0x03, 3, ...Buffer.from('abc'), 0x01, 0xbb];
    const port = await upstream([[0x05, 0x00]], [[...bound, ...HELLO]]);
    expect(await handshake(port)).toEqual({ first: 'HELLO' });
  });

  // The package reads no address for an ATYP it does not know, consumes nothing, and calls the tunnel
  // established: the reply itself became the target's first bytes.
  it('a granted reply with an unknown address type is a failed handshake, not a tunnel', async () => {
    const port = await upstream([[0x05, 0x00]], [[0x05, 0x00, 0x00, 0x09, 1, 2, 3, 4, 0x01, 0xbb, ...HELLO]]);
    const r = await handshake(port);
    expect('error' in r && r.error).toBeInstanceOf(TunnelError);
    expect('error' in r && [r.error.kind, r.error.stage]).toEqual(['handshake_failed', 'PROXY_HANDSHAKE']);
  });

  // Only the CONNECT's reply missing: the upstream is still reaching the target (a blackholed address),
  // which evidenceStage does not blame on the proxy; anything else missing is the proxy's own stall.
  it.each<[string, number[][], number[][], boolean]>([
    ['the greeting unanswered', [], [], false],
    ['the CONNECT unanswered', [[0x05, 0x00]], [], true],
    ['the CONNECT’s reply begun, then nothing', [[0x05, 0x00]], [[0x05, 0x00]], false],
  ])('a handshake timed out with %s: answerAwaited %s', async (_l, method, connect, awaited) => {
    const port = await upstream(method, connect);
    // 2 s: the in-process upstream's answers must land first on a loaded CI machine.
    const r = await handshake(port, 2_000);
    expect('error' in r && [r.error.kind, r.error.stage, r.error.answerAwaited]).toEqual([
      'timeout',
      'PROXY_HANDSHAKE',
      awaited,
    ]);
  });
});
