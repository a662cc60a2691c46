// A scripted forward proxy for gateway tests: it answers absolute-form requests itself, from the path,
// with exact response bytes (Content-Length, chunked with a chunk extension and trailers,
// close-delimited, 204, 304, a slow answer, an echo, early hints, an unsolicited 101, a 17 kB head, a
// Connection-listed field, an answer before the request body that then stops reading, an answer reset
// after 10 of its 1,000 bytes, a body that stalls mid-chunk), several requests per connection — also
// inside a CONNECT tunnel to itself, as a pinned target — and counts the connections it accepted; switches
// make it drop connections the ways a real upstream does, or die.
import net, { type AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';

/** Every byte value, several times: more than one read and one chunk. */
export const BODY = Buffer.from(Array.from({ length: 70_000 }, (_, i) => (i * 7) % 256));
/** /gzip-chunked's body under its gzip coding. */
const GZIPPED = gzipSync('plain text');

export const BIG_COOKIE = 'c'.repeat(17_000);

/** The last bytes /stalled sends, 1,017 of its first chunk's 8,192: then nothing, the connection open. */
export const STALLED_TAIL = `${'s'.repeat(1000)}<stalled mid-body>`;

export interface Seen {
  method: string;
  url: string;
  head: string;
  body: Buffer;
}

/**
 * A forward proxy that answers absolute-form requests itself, from the path: exact response bytes,
 * several requests per connection, accepted connections counted, and two ways to drop a connection.
 */
export function scriptedUpstream() {
  const state = {
    accepted: 0,
    seen: [] as Seen[],
    /** Close a connection this long after its last response (null: keep it). */
    closeIdleAfterMs: null as number | null,
    /** Destroy the next request that arrives on an already used connection, unanswered. */
    dropNextReused: false,
    /** With that drop, stop listening too: a proxy whose process has just died refuses the next dial. */
    dieOnDrop: false,
  };
  const sockets = new Set<net.Socket>();
  const server = net.createServer((s) => {
    state.accepted++;
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
    s.on('error', () => {});
    let buf = Buffer.alloc(0);
    let served = 0;
    let idle: NodeJS.Timeout | null = null;
    s.on('data', (chunk: Buffer) => {
      if (idle) clearTimeout(idle);
      buf = Buffer.concat([buf, chunk]);
      for (;;) {
        const end = buf.indexOf('\r\n\r\n');
        if (end < 0) return;
        const head = buf.toString('latin1', 0, end);
        const [method, url] = head.split(' ') as [string, string];
        if (method === 'CONNECT') {
          // A tunnel to the script itself: the requests that follow are served in origin form (pinned).
          buf = buf.subarray(end + 4);
          s.write('HTTP/1.1 200 Connection established\r\n\r\n');
          continue;
        }
        if (url.endsWith('/early-stall')) {
          // Answers from the head alone, then never reads again: the request body stays unsent.
          state.seen.push({ method, url, head, body: Buffer.alloc(0) });
          s.pause();
          s.write('HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nearly');
          return;
        }
        const cl = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? 0);
        if (buf.length < end + 4 + cl) return;
        const body = buf.subarray(end + 4, end + 4 + cl);
        buf = buf.subarray(end + 4 + cl);
        state.seen.push({ method, url, head, body });
        if (served > 0 && state.dropNextReused) {
          state.dropNextReused = false;
          // The listener first: the gateway's retry must find the port closed.
          if (state.dieOnDrop) server.close();
          s.destroy();
          return;
        }
        served++;
        // Origin form too: the same script serves as a target at the end of a CONNECT tunnel.
        const close = respond(s, method, new URL(url, 'http://target').pathname, body);
        if (close) return;
        if (state.closeIdleAfterMs !== null) idle = setTimeout(() => s.end(), state.closeIdleAfterMs);
      }
    });
  });
  return {
    state,
    listen: () =>
      new Promise<number>((r) =>
        server.listen(0, '127.0.0.1', () => r((server.address() as AddressInfo).port)),
      ),
    close: () => {
      for (const s of sockets) s.destroy();
      return new Promise((r) => server.close(r));
    },
  };
}

/** Writes the scripted response; true when it closed the connection. */
function respond(s: net.Socket, method: string, path: string, body: Buffer): boolean {
  const ok = 'HTTP/1.1 200 OK\r\n';
  switch (path) {
    case '/cl':
      s.write(`${ok}Content-Length: ${BODY.length}\r\nX-Framing: cl\r\nKeep-Alive: timeout=30\r\n\r\n`);
      if (method !== 'HEAD') s.write(BODY);
      return false;
    case '/chunked': {
      s.write(`${ok}Transfer-Encoding: chunked\r\nTrailer: X-Sum\r\nX-Framing: chunked\r\n\r\n`);
      for (const [a, b] of [
        [0, 1],
        [1, 40_000],
        [40_000, BODY.length],
      ] as const) {
        s.write(`${(b - a).toString(16)};ext=1\r\n`);
        s.write(BODY.subarray(a, b));
        s.write('\r\n');
      }
      // A forged gateway field among the trailers: the gateway drops it (plain-forward.ts onEnd).
      s.write('0\r\nX-Sum: 42\r\nX-Proxyplane-Error: no_upstream\r\n\r\n');
      return false;
    }
    case '/gzip-chunked':
    case '/gzip-chunked-205':
      // A coding besides chunked (no request asked for one: the gateway sends no TE): Node de-chunks only.
      // A 205 has a body to Node like any other status but 204 and 304.
      s.write(path === '/gzip-chunked' ? ok : 'HTTP/1.1 205 Reset Content\r\n');
      s.write(`Transfer-Encoding: gzip, chunked\r\n\r\n${GZIPPED.length.toString(16)}\r\n`);
      s.write(GZIPPED);
      s.write('\r\n0\r\n\r\n');
      return false;
    case '/gzip-chunked-304':
      // No body to mislabel: passed on.
      s.write('HTTP/1.1 304 Not Modified\r\nTransfer-Encoding: gzip, chunked\r\n\r\n');
      return false;
    case '/close':
      s.write(`${ok}Connection: close\r\nX-Framing: close\r\n\r\n`);
      s.end(BODY);
      return true;
    case '/slow':
      // Answers after the gateway's idle timeout for pooled connections has passed: a busy connection
      // is not an idle one.
      setTimeout(() => {
        if (!s.destroyed) s.write(`${ok}Content-Length: 4\r\n\r\nslow`);
      }, 1_500);
      return false;
    case '/odd-names':
      // Field names every plain JavaScript object has (inherited): fields like any other.
      s.write(`${ok}Constructor: x\r\n__proto__: z\r\nContent-Length: 2\r\n\r\nok`);
      return false;
    case '/repeated-fields':
      // Single-value fields sent twice (a target's own fault), beside list-valued ones.
      s.write(
        `${ok}Content-Type: text/html; charset=utf-8\r\nContent-Type: text/plain\r\nDate: Mon, 07 Dec 2026 10:00:00 GMT\r\nDate: Mon, 07 Dec 2026 10:00:01 GMT\r\nVary: Accept\r\nVary: Cookie\r\nContent-Length: 2\r\n\r\nok`,
      );
      return false;
    case '/204':
      s.write('HTTP/1.1 204 No Content\r\nX-Framing: none\r\n\r\n');
      return false;
    case '/304':
      s.write('HTTP/1.1 304 Not Modified\r\nETag: "v1"\r\n\r\n');
      return false;
    case '/999':
      // Three digits Node's parser accepts, but no HTTP status.
      s.write('HTTP/1.1 999 Odd\r\nContent-Length: 2\r\n\r\nok');
      return false;
    case '/103':
      // Early Hints, then the answer: an HTTP/1.0 client must see only the answer (RFC 9110 §15.2).
      s.write('HTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n\r\n');
      s.write(`${ok}Content-Length: 5\r\n\r\nfinal`);
      return false;
    case '/truncated':
      // An answer that breaks off after its head: 10 of 1,000 bytes, then a reset.
      // The reset a moment later: the head surely reached the gateway first.
      s.write(`${ok}Content-Length: 1000\r\n\r\n${'x'.repeat(10)}`, () =>
        setTimeout(() => s.resetAndDestroy(), 20),
      );
      return true;
    case '/101':
      // An upgrade nobody asked for (no Upgrade header in the request); the socket stays open.
      s.write('HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n');
      return true;
    case '/101-bare':
    case '/101-upgrade-only':
      // A 101 without `Connection: upgrade` — as squid 3.2–4 forwards any 1xx, hop-by-hop fields dropped —
      // which Node reads as a whole, body-less keep-alive answer; then, on the same connection, the next
      // answer the target sent, once the next request is on it (Node drops what an idle pooled connection
      // receives): whoever's request rides this connection next reads it as theirs.
      s.write(
        `HTTP/1.1 101 Switching Protocols\r\n${path === '/101-upgrade-only' ? 'Upgrade: websocket\r\n' : ''}\r\n`,
      );
      s.prependOnceListener('data', () => {
        if (!s.destroyed) s.write(`${ok}Content-Length: 6\r\n\r\nleaked`);
      });
      return false;
    case '/bare-lf':
      // A head whose lines end in bare LFs, kept alive: no head the gateway (or Node's parser) reads.
      s.write('HTTP/1.1 200 OK\nContent-Length: 2\nConnection: keep-alive\n\nok');
      return false;
    case '/big-head':
      // A 17,000-byte cookie: over Node's default 16 KiB head, well under squid's 64 KB.
      s.write(`${ok}Set-Cookie: big=${BIG_COOKIE}\r\nContent-Length: 2\r\n\r\nok`);
      return false;
    case '/endless': {
      // A body that never ends, 8 KiB every 10 ms, until the reader goes away.
      s.write(`${ok}Transfer-Encoding: chunked\r\nX-Framing: chunked\r\n\r\n`);
      const chunk = Buffer.alloc(8192, 0x61);
      const tick = setInterval(() => {
        if (s.destroyed) return clearInterval(tick);
        s.write(`2000\r\n`);
        s.write(chunk);
        s.write('\r\n');
      }, 10);
      s.once('close', () => clearInterval(tick));
      // The connection is never reusable: no idle timer for it.
      return true;
    }
    case '/stalled':
      // A chunked body that stops in the middle of its first chunk and stays open: everything it will
      // ever send ends with STALLED_TAIL, so a reader can tell it has all of it (and nothing is queued).
      s.write(`${ok}Transfer-Encoding: chunked\r\nX-Framing: chunked\r\n\r\n2000\r\n${STALLED_TAIL}`);
      // The connection is never reusable: no idle timer for it.
      return true;
    case '/hop':
      // A field the target names hop-by-hop in its Connection header: it stays on that hop.
      s.write(
        `${ok}Connection: keep-alive, X-Hop\r\nX-Hop: secret\r\nX-End: kept\r\nContent-Length: 2\r\n\r\nok`,
      );
      return false;
    case '/spoof':
      // A site answering as if it were the gateway refusing: the gateway's own fields, forged.
      s.write(
        'HTTP/1.1 502 Bad Gateway\r\nX-Proxyplane-Error: upstream_auth_failed\r\nX-Proxyplane-Upstream-Status: 407\r\n' +
          'x-proxyplane-route: forged\r\nContent-Length: 2\r\n\r\nno',
      );
      return false;
    case '/echo':
      s.write(`${ok}Content-Length: ${body.length}\r\n\r\n`);
      s.write(body);
      return false;
    default:
      s.write('HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n');
      return false;
  }
}
