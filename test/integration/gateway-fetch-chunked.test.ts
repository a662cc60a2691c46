// /v1/fetch answers chunked, whatever length the target declared: Cloud Run's front end refuses an HTTP/1
// answer over 32 MiB that is neither chunked nor streamed (an empty 500 to the client, for a body the
// gateway counted ok), and GATEWAY_FETCH_MAX_RESPONSE_BYTES lets 64 MiB through. The declared length is
// told as X-Proxyplane-Content-Length; answers without a body still end at their head; an HTTP/1.0 client,
// which takes no chunks, keeps the length. A gateway in process, the scripted upstream on both plain-HTTP
// paths (absolute form, and pinned through a CONNECT tunnel to itself).
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicAuth, postFetch, rawExchange } from '../../bench/support/gateway-process.js';
import type { GatewayHandle } from '../../functions/gateway/src/gateway.js';
import { BODY, scriptedUpstream } from '../support/scripted-proxy.js';
import { startTwoPathGateway, twoPathSnapshot } from '../support/two-path-gateway.js';

const HOSTS = { absolute: '127.0.0.9', pinned: '127.0.0.10' } as const;
const AUTH = basicAuth('any', 'one');

describe('/v1/fetch answers chunked', () => {
  const scripted = scriptedUpstream();
  let gw: GatewayHandle;

  beforeAll(async () => {
    const port = await scripted.listen();
    const file = twoPathSnapshot(port, HOSTS);
    gw = await startTwoPathGateway(file, HOSTS);
  });

  afterAll(async () => {
    await gw?.shutdown();
    await scripted.close();
  });

  it.each(['absolute', 'pinned'] as const)(
    '%s: a body the target sent with Content-Length arrives chunked, whole, its length told apart',
    async (path) => {
      const r = await postFetch(gw.httpPort, { url: `http://${HOSTS[path]}/cl` }, AUTH, 5_000);
      expect(r.status).toBe(200);
      expect(r.headers['transfer-encoding']).toBe('chunked');
      expect(r.headers['content-length']).toBeUndefined();
      expect(r.headers['x-proxyplane-content-length']).toBe(String(BODY.length));
      expect(Buffer.from(r.body, 'latin1').equals(BODY)).toBe(true);
    },
  );

  it('a target that declared no length: none told', async () => {
    const r = await postFetch(gw.httpPort, { url: `http://${HOSTS.absolute}/chunked` }, AUTH, 5_000);
    expect(r.headers['transfer-encoding']).toBe('chunked');
    expect(r.headers['x-proxyplane-content-length']).toBeUndefined();
    expect(Buffer.from(r.body, 'latin1').equals(BODY)).toBe(true);
  });

  it('answers without a body end at their head: HEAD (its length told), 204, 304', async () => {
    const head = await postFetch(
      gw.httpPort,
      { url: `http://${HOSTS.absolute}/cl`, method: 'HEAD' },
      AUTH,
      5_000,
    );
    expect(head.status).toBe(200);
    expect(head.headers['content-length']).toBeUndefined();
    expect(head.headers['x-proxyplane-content-length']).toBe(String(BODY.length));
    expect(head.body).toBe('');
    for (const status of [204, 304]) {
      const r = await postFetch(gw.httpPort, { url: `http://${HOSTS.absolute}/${status}` }, AUTH, 5_000);
      expect(r.status).toBe(status);
      expect(r.headers['transfer-encoding']).toBeUndefined();
      expect(r.headers['content-length']).toBeUndefined();
      expect(r.body).toBe('');
    }
  });

  it('an HTTP/1.0 client gets a whole body the target declared no length of, ended at an ordinary close', async () => {
    const r = await http10Fetch(gw.httpPort, `http://${HOSTS.absolute}/chunked`);
    expect(r.ended).toBe('fin');
    expect(r.bytes.subarray(r.bytes.indexOf('\r\n\r\n') + 4).equals(BODY)).toBe(true);
  });

  it('an HTTP/1.0 client, which takes no chunks, gets the length the target declared', async () => {
    const body = JSON.stringify({ url: `http://${HOSTS.absolute}/cl` });
    const r = await rawExchange(
      gw.httpPort,
      `POST /v1/fetch HTTP/1.0\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
    );
    const raw = Buffer.from(r.text, 'latin1');
    const end = raw.indexOf('\r\n\r\n');
    const head = raw.toString('latin1', 0, end);
    expect(head).toMatch(/^HTTP\/1\.1 200 /);
    expect(head).toMatch(new RegExp(`\r\ncontent-length: ${BODY.length}\r\n`, 'i'));
    expect(head).not.toMatch(/transfer-encoding/i);
    expect(raw.subarray(end + 4).equals(BODY)).toBe(true);
  });
});

/** An HTTP/1.0 /v1/fetch of `url` over a raw socket: the bytes, and whether the gateway ended it or reset it. */
function http10Fetch(port: number, url: string): Promise<{ bytes: Buffer; ended: 'fin' | 'reset' }> {
  const body = JSON.stringify({ url });
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const s = net.connect({ port, host: '127.0.0.1' });
    const timer = setTimeout(() => {
      s.destroy();
      reject(new Error('no end in 5 s'));
    }, 5_000);
    const finish = (ended: 'fin' | 'reset') => {
      clearTimeout(timer);
      resolve({ bytes: Buffer.concat(chunks), ended });
    };
    s.on('data', (c) => chunks.push(c));
    s.on('end', () => finish('fin'));
    s.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'ECONNRESET') finish('reset');
      else reject(err);
    });
    s.write(
      `POST /v1/fetch HTTP/1.0\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
    );
  });
}

// A body that ends at the close (an HTTP/1.0 client, a target that declared no length) cut at the
// response cap ended with an ordinary close, and looked complete.
describe('/v1/fetch to an HTTP/1.0 client, over the response cap', () => {
  const scripted = scriptedUpstream();
  let gw: GatewayHandle;

  beforeAll(async () => {
    const port = await scripted.listen();
    const file = twoPathSnapshot(port, HOSTS);
    gw = await startTwoPathGateway(file, HOSTS, { env: { GATEWAY_FETCH_MAX_RESPONSE_BYTES: '20000' } });
  });

  afterAll(async () => {
    await gw?.shutdown();
    await scripted.close();
  });

  it.each(['absolute', 'pinned'] as const)(
    '%s: a body with no length, cut, resets the connection',
    async (path) => {
      // The reset may also take what was still unread (the head): an error either way, never an end.
      const r = await http10Fetch(gw.httpPort, `http://${HOSTS[path]}/chunked`);
      expect(r.ended).toBe('reset');
      expect(r.bytes.length).toBeLessThan(BODY.length);
    },
  );

  // Joined, two Content-Types read as a charset `utf-8, text/plain`, and two Dates as no date at all.
  it('keeps the first of a single-value field the target repeated, and joins a list-valued one', async () => {
    const r = await http10Fetch(gw.httpPort, `http://${HOSTS.absolute}/repeated-fields`);
    const head = r.bytes.toString('latin1');
    expect(head).toMatch(/\r\ncontent-type: text\/html; charset=utf-8\r\n/i);
    expect(head).not.toContain('text/plain');
    expect(head).toMatch(/\r\ndate: Mon, 07 Dec 2026 10:00:00 GMT\r\n/i);
    expect(head).not.toContain('10:00:01');
    expect(head).toMatch(/\r\nvary: Accept, Cookie\r\n/i);
  });

  it("passes a target's fields named like an object's own properties as they came", async () => {
    const r = await http10Fetch(gw.httpPort, `http://${HOSTS.absolute}/odd-names`);
    const head = r.bytes.toString('latin1');
    expect(head).toMatch(/\r\nconstructor: x\r\n/i);
    expect(head).toMatch(/\r\n__proto__: z\r\n/i);
  });
});
