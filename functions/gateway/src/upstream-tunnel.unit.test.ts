import net, { type AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import type { Upstream } from '../../../shared/src/domain/gateway/routing.js';
import type { UpstreamAuth } from './compile.js';
import { socks5Failure } from './socks5-failure.js';
import { evidenceStage, openTunnel, TunnelError, tunnelRefusal } from './upstream-tunnel.js';

const socks = (bytes: number[]): TunnelError => {
  const f = socks5Failure(Uint8Array.from(bytes));
  return new TunnelError(
    f.kind,
    'PROXY_HANDSHAKE',
    undefined,
    f.kind === 'refused' ? { socksReply: f.reply } : {},
  );
};

describe('tunnelRefusal: a SOCKS5 upstream failing is answered as an http one failing the same way', () => {
  it.each<[string, TunnelError, number, string, Record<string, number> | undefined]>([
    [
      'http: 407 to our CONNECT',
      new TunnelError('auth_failed', 'PROXY_HANDSHAKE', 407),
      502,
      'upstream_auth_failed',
      { upstreamStatus: 407 },
    ],
    ['socks5: RFC 1929 status 0x01', socks([0x05, 0x02, 0x01, 0x01]), 502, 'upstream_auth_failed', undefined],
    ['socks5: no acceptable method', socks([0x05, 0xff]), 502, 'upstream_auth_failed', undefined],
    [
      'http: 502 from squid (target unreachable)',
      new TunnelError('refused', 'PROXY_HANDSHAKE', 502),
      502,
      'upstream_refused',
      { upstreamStatus: 502 },
    ],
    [
      'socks5: 0x04 host unreachable',
      socks([0x05, 0x00, 0x05, 0x04]),
      502,
      'upstream_refused',
      { socksReply: 4 },
    ],
    [
      'socks5: 0x05 connection refused',
      socks([0x05, 0x00, 0x05, 0x05]),
      502,
      'upstream_refused',
      { socksReply: 5 },
    ],
    [
      'http: 403 (not allowed)',
      new TunnelError('refused', 'PROXY_HANDSHAKE', 403),
      502,
      'upstream_refused',
      { upstreamStatus: 403 },
    ],
    [
      'socks5: 0x02 not allowed by ruleset',
      socks([0x05, 0x00, 0x05, 0x02]),
      502,
      'upstream_refused',
      { socksReply: 2 },
    ],
    ['socks5: not a SOCKS5 answer', socks([0x48, 0x54]), 502, 'upstream_handshake_failed', undefined],
    ['socks5: closed mid-handshake', socks([0x05]), 502, 'upstream_closed', undefined],
    [
      'either: timed out in the handshake',
      new TunnelError('timeout', 'PROXY_HANDSHAKE'),
      504,
      'upstream_timeout',
      undefined,
    ],
    [
      'either: TCP to the upstream failed',
      new TunnelError('dial_failed', 'DIAL'),
      502,
      'upstream_dial_failed',
      undefined,
    ],
  ])('%s → %i %s', (_n, e, status, code, detail) => {
    expect(tunnelRefusal(e)).toEqual({ status, code, detail });
  });

  it('every SOCKS5 handshake failure is stage PROXY_HANDSHAKE, as a refused HTTP CONNECT is', () => {
    expect(socks([0x05, 0x00, 0x05, 0x05]).stage).toBe('PROXY_HANDSHAKE');
  });
});

describe('evidenceStage: what a failed handshake says of the proxy', () => {
  it.each<[TunnelError['kind'], 'DIAL' | 'PROXY_HANDSHAKE', boolean, string]>([
    ['refused', 'PROXY_HANDSHAKE', false, 'RESPONSE_HEADERS'],
    ['timeout', 'PROXY_HANDSHAKE', true, 'RESPONSE_HEADERS'],
    ['timeout', 'PROXY_HANDSHAKE', false, 'PROXY_HANDSHAKE'],
    ['timeout', 'DIAL', false, 'DIAL'],
    ['auth_failed', 'PROXY_HANDSHAKE', true, 'PROXY_HANDSHAKE'],
    ['closed', 'PROXY_HANDSHAKE', true, 'PROXY_HANDSHAKE'],
    ['handshake_failed', 'PROXY_HANDSHAKE', true, 'PROXY_HANDSHAKE'],
  ])('%s at %s (answer awaited: %s) → %s', (kind, stage, awaited, expected) =>
    expect(evidenceStage(kind, stage, awaited)).toBe(expected),
  );
});

describe('openTunnel: timeoutMs bounds the whole handshake', () => {
  it('an upstream that never answers its CONNECT (squid still dialling a dead target) times out, the answer awaited', async () => {
    const held: net.Socket[] = [];
    const server = net.createServer((s) => {
      s.on('error', () => {});
      held.push(s);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    const sockets = { upstreams: 0, proxyClients: 0, httpClients: 0 };
    const u = { host: '127.0.0.1', port, auth: { line: '' } } as unknown as Upstream<UpstreamAuth>;
    try {
      const e = (await openTunnel(u, '192.0.2.1:9', 200, sockets).catch((x: unknown) => x)) as TunnelError;
      expect([e.kind, e.stage, e.answerAwaited]).toEqual(['timeout', 'PROXY_HANDSHAKE', true]);
      expect(evidenceStage(e.kind, e.stage, e.answerAwaited)).toBe('RESPONSE_HEADERS');
    } finally {
      for (const s of held) s.destroy();
      await new Promise((r) => server.close(r));
    }
  });

  it('an upstream dripping its CONNECT answer a byte at a time times out at the bound, socket closed', async () => {
    const server = net.createServer((s) => {
      s.on('error', () => {});
      const answer = `HTTP/1.1 200 Connection established\r\nX-Pad: ${'p'.repeat(200)}\r\n\r\n`;
      let i = 0;
      // Every 40 ms, well inside the 300 ms bound: an idle timer re-armed per byte would never fire.
      const t = setInterval(
        () => (i < answer.length && !s.destroyed ? s.write(answer[i++]!) : clearInterval(t)),
        40,
      );
      s.once('close', () => clearInterval(t));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    const sockets = { upstreams: 0, proxyClients: 0, httpClients: 0 };
    const u = { host: '127.0.0.1', port, auth: { line: '' } } as unknown as Upstream<UpstreamAuth>;
    try {
      const t0 = Date.now();
      const e = await openTunnel(u, '127.0.0.9:80', 300, sockets).catch((x: unknown) => x);
      expect(e).toBeInstanceOf(TunnelError);
      expect((e as TunnelError).kind).toBe('timeout');
      // An answer begun and never finished is the upstream's own doing: evidence against it.
      expect((e as TunnelError).answerAwaited).toBe(false);
      expect(Date.now() - t0).toBeLessThan(2_000);
      await new Promise((r) => setTimeout(r, 50));
      expect(sockets.upstreams).toBe(0);
    } finally {
      await new Promise((r) => server.close(r));
    }
  });
});
