// `Expect: 100-continue` on /v1/fetch: the head is judged before the body is invited. Node answers
// 100 Continue itself unless the server handles 'checkContinue', so a client without credentials, or one
// declaring a body over the limit, was asked for its body — then drained, up to 64 MiB — before its 401 or
// 413. A real gateway process, the emulator's forward proxy as its upstream, an echoing target.
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicAuth, type GatewayProcess, startGateway } from '../../bench/support/gateway-process.js';
import { snapshotFile } from '../../bench/support/snapshot-file.js';
import { startTargets, type Targets } from '../../bench/support/targets.js';
import { createForwardProxy, type ForwardProxy } from '../../emulators/forward-proxy/proxy.js';

const AUTH = basicAuth('crawler', 's3cret');
const MAX_BODY = 1000;

/** A raw client connection: what it has read so far, a wait for more, and whether the gateway closed it. */
function client(port: number) {
  const s = net.connect({ port, host: '127.0.0.1' });
  let text = '';
  let closed = false;
  let wake: () => void = () => {};
  s.on('data', (c: Buffer) => {
    text += c.toString('latin1');
    wake();
  });
  s.on('error', () => {});
  s.on('close', () => {
    closed = true;
    wake();
  });
  return {
    socket: s,
    get text() {
      return text;
    },
    get closed() {
      return closed;
    },
    /** Until `done(text)` holds or the gateway closed the connection, for at most `ms`. */
    async until(done: (t: string) => boolean, ms = 5_000): Promise<string> {
      const end = Date.now() + ms;
      while (!done(text) && !closed && Date.now() < end)
        await new Promise<void>((r) => {
          wake = r;
          setTimeout(r, 50);
        });
      return text;
    },
  };
}

const head = (length: number, auth?: string) =>
  'POST /v1/fetch HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\nExpect: 100-continue\r\n' +
  `${auth ? `Authorization: ${auth}\r\n` : ''}Content-Length: ${length}\r\n\r\n`;

const firstLine = (t: string) => t.slice(0, t.indexOf('\r\n'));

describe('/v1/fetch with Expect: 100-continue', () => {
  let targets: Targets;
  let upstream: ForwardProxy;
  let gw: GatewayProcess;

  beforeAll(async () => {
    targets = await startTargets();
    upstream = createForwardProxy({ credentials: 'up:up-pass' });
    const up = `http://up:up-pass@127.0.0.1:${(await upstream.listen()).port}`;
    gw = await startGateway(snapshotFile({ upstreams: [up] }), {
      GATEWAY_CLIENT_USERS: 'crawler:s3cret',
      GATEWAY_SSRF_ALLOW: `127.0.0.1:${targets.httpPort}`,
      GATEWAY_FETCH_MAX_BODY_BYTES: String(MAX_BODY),
    });
  });

  afterAll(async () => {
    await gw?.stop('SIGKILL');
    await upstream?.close();
    await targets?.close();
  });

  it('refuses a client without credentials with 401, never inviting its body, and closes', async () => {
    const c = client(gw.httpPort);
    c.socket.write(head(100));
    const text = await c.until((t) => t.includes('"error":"unauthorized"}'));
    expect(firstLine(text)).toBe('HTTP/1.1 401 Unauthorized');
    expect(text).not.toContain('100 Continue');
    expect(text).toContain('x-proxyplane-error: unauthorized');
    expect(text).toContain('www-authenticate: Bearer, Basic realm="proxyplane"');
    // The body it was never asked for: the connection ends with the answer.
    expect(await c.until(() => false)).toBe(text);
    expect(c.closed).toBe(true);
  });

  it('refuses a declared length over the limit with 413 before authentication, and closes', async () => {
    for (const auth of [undefined, AUTH]) {
      const c = client(gw.httpPort);
      c.socket.write(head(MAX_BODY + 1, auth));
      const text = await c.until((t) => t.includes('"error":"body_too_large"}'));
      expect(firstLine(text)).toBe('HTTP/1.1 413 Payload Too Large');
      expect(text).not.toContain('100 Continue');
      expect(text).toContain('x-proxyplane-error: body_too_large');
      await c.until(() => false);
      expect(c.closed).toBe(true);
    }
  });

  it('invites the body of an authenticated request within the limit, then answers it', async () => {
    const c = client(gw.httpPort);
    const body = JSON.stringify({ url: `http://127.0.0.1:${targets.httpPort}/after-continue` });
    c.socket.write(head(Buffer.byteLength(body), AUTH));
    const invited = await c.until((t) => t.includes('\r\n\r\n'));
    expect(invited).toBe('HTTP/1.1 100 Continue\r\n\r\n');
    c.socket.write(body);
    const text = await c.until((t) => t.includes('/after-continue') && t.endsWith('0\r\n\r\n'));
    expect(text.slice(invited.length)).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(text).toContain('"url":"/after-continue"');
    // Kept alive, as any answered request.
    expect(c.closed).toBe(false);
    c.socket.destroy();
  });

  it('leaves other paths as Node served them: 100, then the answer', async () => {
    const c = client(gw.httpPort);
    c.socket.write('GET /healthz HTTP/1.1\r\nHost: gw\r\nExpect: 100-continue\r\nContent-Length: 0\r\n\r\n');
    const text = await c.until((t) => t.includes('"ok":true'));
    expect(text).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200 OK\r\n/);
    c.socket.destroy();
  });
});
