// /v1/fetch answers chunked, whatever length the target declared: Cloud Run's front end refuses an HTTP/1
// answer over 32 MiB that is neither chunked nor streamed (an empty 500 to the client, for a body the
// gateway counted ok), and GATEWAY_FETCH_MAX_RESPONSE_BYTES lets 64 MiB through. The declared length is
// told as X-Proxyplane-Content-Length; answers without a body still end at their head; an HTTP/1.0 client,
// which takes no chunks, keeps the length. A gateway in process, the scripted upstream on both plain-HTTP
// paths (absolute form, and pinned through a CONNECT tunnel to itself).
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
