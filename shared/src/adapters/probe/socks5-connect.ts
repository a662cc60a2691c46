// SOCKS5 CONNECT through a proxy for one probe, on a fresh connection (seed §6: nothing kept alive). Our
// own TCP dial first — so a proxy that refuses or cannot be reached fails the DIAL with its errno, as an
// HTTP proxy does — then the `socks` package's handshake on that socket (greeting; RFC 1929
// username/password when the proxy has credentials; CONNECT by name, ATYP 3: the probe checks fixed URLs,
// so there is no SSRF guard's decision to pin as the gateway must). Every failure once connected is
// PROXY_HANDSHAKE, as for an HTTP proxy; what it was is read from the proxy's answers (socks5-answer.ts).
// A proxy host that is a name is resolved by our dial, through `lookup` when given (the prober's c-ares
// resolver, ../dns-resolve.ts), and the package is handed the connected socket: it never looks the
// proxy's name up itself.
import { connect, type Socket } from 'node:net';
import { SocksClient } from 'socks';
import { grantedReplyReadable, socks5Answer, socks5FailureCode } from '../../domain/socks5-answer.js';
import { type DialLookup, lookupOption } from '../dns-resolve.js';
import { errorCode, ProbeFailure } from './probe-failure.js';

export interface Socks5Hop {
  host: string;
  port: number;
  /** "user:pass" (split at the first ":", as usernames hold none); none: offer "no authentication". */
  credentials?: string | null;
}

/** RFC 1929 §2: ULEN and PLEN are one byte each. */
const MAX_CREDENTIAL_BYTES = 255;

/**
 * Resolves with the socket once the proxy granted the CONNECT (its next bytes are the destination's).
 * Rejects with a ProbeFailure; `timeoutMs` is only the package's own backstop: the deadline ends it (the
 * look-up of the proxy's name too). `lookup`: how that name is resolved; absent, dns.lookup.
 */
export async function socks5Connect(
  hop: Socks5Hop,
  destination: { host: string; port: number },
  deadline: AbortSignal,
  timeoutMs: number,
  lookup?: DialLookup,
): Promise<Socket> {
  const auth = splitCredentials(hop.credentials);
  const socket = await dial(hop, deadline, lookup);
  return handshake(socket, hop, auth, destination, deadline, timeoutMs);
}

function splitCredentials(credentials: string | null | undefined) {
  if (!credentials) return null;
  const colon = credentials.indexOf(':');
  const userId = colon < 0 ? credentials : credentials.slice(0, colon);
  const password = colon < 0 ? '' : credentials.slice(colon + 1);
  // The package would throw from inside its socket handler (an uncaught exception) on a longer one.
  if (Buffer.byteLength(userId) > MAX_CREDENTIAL_BYTES || Buffer.byteLength(password) > MAX_CREDENTIAL_BYTES)
    throw new ProbeFailure('PROXY_HANDSHAKE', 'socks_credentials_too_long');
  return { userId, password };
}

function dial(hop: Socks5Hop, deadline: AbortSignal, lookup: DialLookup | undefined): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hop.host, port: hop.port, ...lookupOption(lookup) });
    // Kept for the socket's life: an error between here and the next listener must not go unhandled.
    socket.on('error', () => {});
    const fail = (code: string) => {
      deadline.removeEventListener('abort', onAbort);
      socket.destroy();
      reject(new ProbeFailure('DIAL', code));
    };
    const onAbort = () => fail(errorCode(null, deadline)); // timeout, or cancelled by the caller
    const onError = (err: Error) => fail(errorCode(err, deadline));
    if (deadline.aborted) return onAbort();
    deadline.addEventListener('abort', onAbort, { once: true });
    socket.once('error', onError);
    // once: the package emits 'connect' again on a socket handed to it.
    socket.once('connect', () => {
      deadline.removeEventListener('abort', onAbort);
      socket.removeListener('error', onError);
      resolve(socket);
    });
  });
}

function handshake(
  socket: Socket,
  hop: Socks5Hop,
  auth: { userId: string; password: string } | null,
  destination: { host: string; port: number },
  deadline: AbortSignal,
  timeoutMs: number,
): Promise<Socket> {
  return new Promise((resolve, reject) => {
    // Everything the proxy sends, for socks5Answer: the package reports its failures as text only.
    const seen: Buffer[] = [];
    const tap = (b: Buffer) => void seen.push(b);
    let socketError: unknown = null;
    const onError = (err: unknown) => {
      socketError ??= err;
    };
    const onAbort = () => socket.destroy();
    socket.on('data', tap);
    socket.on('error', onError);
    deadline.addEventListener('abort', onAbort, { once: true });
    const settle = () => {
      socket.removeListener('data', tap);
      socket.removeListener('error', onError);
      deadline.removeEventListener('abort', onAbort);
    };
    SocksClient.createConnection({
      proxy: { host: hop.host, port: hop.port, type: 5, ...(auth ?? {}) },
      command: 'connect',
      destination,
      timeout: timeoutMs + 1000,
      existing_socket: socket,
    }).then(
      // The package paused the socket and resumes it on its next turn: the tap is off before then, and
      // whoever reads the tunnel (TLS, the HTTP client) is attached by then. A grant with an address type
      // the package cannot read is not the protocol's: it consumed nothing, so the reply itself would be
      // the tunnel's first bytes, and a probe would time out in TLS or fail on a garbled status line
      // instead of naming the proxy's fault.
      () => {
        settle();
        if (grantedReplyReadable(seen)) return resolve(socket);
        socket.destroy();
        reject(new ProbeFailure('PROXY_HANDSHAKE', 'not_socks5'));
      },
      () => {
        settle();
        socket.destroy();
        const code = deadline.aborted
          ? errorCode(null, deadline)
          : socketError
            ? errorCode(socketError, deadline)
            : socks5FailureCode(socks5Answer(Buffer.concat(seen)));
        reject(new ProbeFailure('PROXY_HANDSHAKE', code));
      },
    );
  });
}
