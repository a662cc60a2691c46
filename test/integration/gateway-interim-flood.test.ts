// A target that answers with interim heads forever (`100 Continue`, again and again, never a final
// status). Each head is small, so the response-head limit for one head never applied: every head was
// queued for the client — without end for a client that does not read — and the session never ended.
// Now a response's interim heads together get the one response-head limit (64 KiB); past it the request
// is a 502 target_bad_response and the target's connection is closed. On both plain-HTTP paths: pinned
// (the request in origin form through a CONNECT tunnel) and absolute form (Node's client parses).
// The upstream below plays the target too: it grants any CONNECT, then floods whatever request comes.
import net, { type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  basicAuth,
  type GatewayProcess,
  rawExchange,
  startGateway,
} from '../../bench/support/gateway-process.js';
import { snapshotFile } from '../../bench/support/snapshot-file.js';
import { pollUntil } from '../support/poll.js';

const AUTH = basicAuth('crawler', 's3cret');
const CONTINUE = 'HTTP/1.1 100 Continue\r\n\r\n';
/**
 * ~32 MB of heads at most: the loopback's socket buffers take a few MB from the target before the gateway
 * has read its first 64 KiB, so only a flood this long tells "cut" from "read to the end".
 */
const FLOOD_HEADS = 1_280_000;
const BATCH = 1_000;
/** Routed to the upstream that filters destinations (absolute form); never dialled. */
const ABSOLUTE = '127.0.0.5';
/** Pinned: named in the upstream CONNECT; the upstream plays it. */
const PINNED = '127.0.0.1:9';

describe('a target sending interim heads forever', () => {
  let gw: GatewayProcess;
  let upstream: net.Server;
  /** Per upstream connection: interim heads written to it, and whether it closed. */
  const floods: { sent: number; closed: boolean }[] = [];

  beforeAll(async () => {
    upstream = net.createServer((s) => {
      const f = { sent: 0, closed: false };
      floods.push(f);
      s.on('error', () => {});
      s.on('close', () => {
        f.closed = true;
      });
      let buf = '';
      let flooding = false;
      const more = () => {
        while (!f.closed && f.sent < FLOOD_HEADS) {
          f.sent += BATCH;
          if (!s.write(CONTINUE.repeat(BATCH))) {
            s.once('drain', more);
            return;
          }
        }
        // All sent and the connection still open: no final head, ever.
      };
      s.on('data', (d: Buffer) => {
        buf += d.toString('latin1');
        for (let end = buf.indexOf('\r\n\r\n'); end >= 0 && !flooding; end = buf.indexOf('\r\n\r\n')) {
          const head = buf.slice(0, end);
          buf = buf.slice(end + 4);
          if (head.startsWith('CONNECT ')) s.write('HTTP/1.1 200 Connection established\r\n\r\n');
          else {
            flooding = true;
            more();
          }
        }
      });
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    const port = (upstream.address() as AddressInfo).port;
    const url = `http://up:up-pass@127.0.0.1:${port}`;
    gw = await startGateway(
      snapshotFile({
        upstreams: [url, url],
        routing: [
          {
            name: 'absolute',
            match: { hosts: [ABSOLUTE] },
            selector: { pool: 'abs' },
            policy: 'round-robin',
          },
          { name: 'pinned', match: { hosts: ['*'] }, selector: { pool: 'pinned' }, policy: 'round-robin' },
        ],
        attributes: (i) => ({ pool: ['pinned', 'abs'][i]! }),
        filtersDestinations: (i) => i === 1,
      }),
      { GATEWAY_CLIENT_USERS: 'crawler:s3cret', GATEWAY_SSRF_ALLOW: `${PINNED},${ABSOLUTE}:80` },
    );
  });

  afterAll(async () => {
    await gw?.stop();
    await new Promise((r) => upstream?.close(r));
  });

  const request = (authority: string) =>
    `GET http://${authority}/x HTTP/1.1\r\nHost: ${authority}\r\nProxy-Authorization: ${AUTH}\r\n\r\n`;

  const noLoad = () => pollUntil(gw.health, (x) => x.load.active + x.load.reserved === 0, 5_000, 'no load');
  /** The flood the `index`-th target connection sent, once that connection has closed. */
  const floodClosed = async (index: number) =>
    (await pollUntil(
      async () => floods[index],
      (x) => x?.closed === true,
      5_000,
      'the target connection closed',
    ))!;

  describe.each([
    ['pinned', PINNED],
    ['absolute form', ABSOLUTE],
  ])('%s', (_, authority) => {
    it('a client reading along gets at most 64 KiB of interim heads, then a 502 target_bad_response', async () => {
      const before = floods.length;
      const r = await rawExchange(gw.proxyPort, request(authority), { timeoutMs: 8_000 });
      expect(r.closedBy).toBe('server');
      const final = r.text.lastIndexOf('HTTP/1.1 502 ');
      expect(final).toBeGreaterThan(0);
      expect(final).toBeLessThanOrEqual(64 * 1024);
      expect(r.text.slice(0, final)).toMatch(/^(HTTP\/1\.1 100 Continue\r\n\r\n)+$/);
      expect(r.text.slice(final)).toContain('X-Proxyplane-Error: target_bad_response');
      expect((await floodClosed(before)).sent).toBeLessThan(FLOOD_HEADS);
      await noLoad();
    });

    it('for a client that never reads, the target connection is cut as well', async () => {
      const before = floods.length;
      const c = net.connect({ port: gw.proxyPort, host: '127.0.0.1' });
      c.on('error', () => {});
      c.pause();
      c.write(request(authority));
      try {
        // Not read to the end of the flood into the gateway's memory: cut once past the limit.
        expect((await floodClosed(before)).sent).toBeLessThan(FLOOD_HEADS);
      } finally {
        c.destroy();
      }
      await noLoad();
    });
  });
});
