// The target's response heads on the pinned plain-HTTP path (proxy-session.ts), written for the client
// as the absolute-form path writes them (response-head.ts clientResponseHead): the target hop's own
// fields go (Connection and what it lists but the body's framing, Keep-Alive, Proxy-Connection, Upgrade,
// Proxy-Authenticate) and the final head says `Connection: close` — one request per client connection,
// so a client never keeps alive a connection on which the gateway would drop its next request. Only the
// heads are rewritten: the body, framed by the target (Content-Length, chunked, close-delimited), is
// relayed byte for byte. A head this does not parse is a bad answer, as Node's parser makes it on the
// absolute-form path and on /v1/fetch (502 target_bad_response): relayed as it came, it reached the
// client without `Connection: close`, and a client that pipelined waited on a request the gateway
// dropped until the target closed.
import { HEAD_END, statusOf, trimOws } from './head.js';
import { clientResponseHead } from './response-head.js';

export interface PinnedHeads {
  /** The heads rewritten so far (latin1), interim ones first, then the final one if it was complete. */
  readonly out: string;
  /** Bytes of the input the heads in `out` took: what follows is relayed (or, if not `done`, waited on). */
  readonly consumed: number;
  /**
   * The final status (≥ 200), 0 while only interim heads (or none) are complete — or, once `done`, when
   * what follows `consumed` is no head this parses: not HTTP, a line ended by a bare LF or holding a bare
   * CR, obs-fold, a field name that is not a token, longer than `max`, or a 101 (no request of ours asks
   * to switch protocols).
   */
  readonly status: number;
  /** The heads are over: a final head was written (what follows is its body), or a bad one met. */
  readonly done: boolean;
}

const CR_OR_LF = /[\r\n]/;
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const BARE_END = Buffer.from('\n\n');

/** The flat [name, value, …] list of a head's field lines, or null for anything but plain fields. */
function fields(lines: readonly string[]): string[] | null {
  const raw: string[] = [];
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i]!;
    const colon = line.indexOf(':');
    if (colon <= 0 || CR_OR_LF.test(line)) return null;
    const name = line.slice(0, colon);
    if (!TOKEN.test(name)) return null; // obs-fold (a leading SP/HTAB) included
    raw.push(name, trimOws(line, colon + 1));
  }
  return raw;
}

/**
 * Rewrites the complete response heads at the start of `buf` (bytes from the target, as they came).
 * An HTTP/1.0 client gets no interim (1xx) head, as on the absolute-form path (RFC 9110 §15.2).
 */
export function pinnedHeads(
  buf: Buffer,
  max: number,
  clientHttp11: boolean,
  /** Where to resume looking for the end of the first head: the bytes before were searched already. */
  scanFrom = 0,
): PinnedHeads {
  let out = '';
  let pos = 0;
  for (;;) {
    const bad = { out, consumed: pos, status: 0, done: true };
    const status = statusOf(buf.subarray(pos), 999);
    if (status === 0 || status === 101) {
      // Not a status line (yet)? Wait for one only while it could still become one.
      const short = status === 0 && buf.length - pos < 12 && buf.indexOf(10, pos) < 0;
      return short ? { ...bad, done: false } : bad;
    }
    const from = pos === 0 ? scanFrom : pos;
    const end = buf.indexOf(HEAD_END, from);
    // A head ended by bare LFs (`\n\n`, which a CRLF head never holds): no CRLF end will come.
    if ((end < 0 ? buf : buf.subarray(0, end)).indexOf(BARE_END, from) >= 0) return bad;
    if (end < 0) return buf.length - pos > max ? bad : { ...bad, done: false };
    // Over `max` though complete (its end came in the read after the one that reached `max`): as long,
    // so that what is parsed stays bounded by `max`, not twice it.
    if (end - pos > max) return bad;
    const lines = buf.toString('latin1', pos, end).split('\r\n');
    const raws = fields(lines);
    if (!raws || CR_OR_LF.test(lines[0]!)) return bad;
    const reason = lines[0]!.slice(13);
    pos = end + 4;
    if (status >= 200) {
      out += clientResponseHead(status, reason, raws, 'as-is');
      return { out, consumed: pos, status, done: true };
    }
    if (clientHttp11) out += clientResponseHead(status, reason, raws, 'interim');
  }
}
