// The SOCKS5 side of the proxy (RFC 1928, username/password auth per RFC 1929): greeting, optional
// sub-negotiation, one CONNECT request, then the same tunnel as an HTTP CONNECT. External proxies that
// crawler teams bring are often SOCKS5-only; this is what tests and the local plane stand them up with.
// Only CONNECT is served (BIND and UDP ASSOCIATE are answered "command not supported").
import { isIPv6, type Socket } from 'node:net';
import type { ProxyContext, ProxyCounters } from './context.js';
import { openTunnel, type TunnelAnswer } from './tunnel.js';

const VERSION = 0x05;
const AUTH_VERSION = 0x01;
const NO_AUTH = 0x00;
const USER_PASS = 0x02;
const NO_ACCEPTABLE = 0xff;
const CMD_CONNECT = 0x01;
const ATYP_IPV4 = 0x01;
const ATYP_DOMAIN = 0x03;
const ATYP_IPV6 = 0x04;

/** RFC 1928 §6 reply codes. */
export const Reply = {
  succeeded: 0x00,
  generalFailure: 0x01,
  notAllowedByRuleset: 0x02,
  networkUnreachable: 0x03,
  hostUnreachable: 0x04,
  connectionRefused: 0x05,
  ttlExpired: 0x06,
  commandNotSupported: 0x07,
  addressTypeNotSupported: 0x08,
} as const;

/** Why a tunnel could not be opened, in SOCKS terms: a timeout is "TTL expired", as curl reports it. */
export function replyForFailure(status: 502 | 504, code: string | undefined): number {
  if (status === 504) return Reply.ttlExpired;
  switch (code) {
    case 'ECONNREFUSED':
      return Reply.connectionRefused;
    case 'ENETUNREACH':
      return Reply.networkUnreachable;
    case 'EHOSTUNREACH':
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return Reply.hostUnreachable;
    default:
      return Reply.generalFailure;
  }
}

/** A reply with a bound address (RFC 1928 §6); failures carry the zero IPv4 address. */
export function socksReply(rep: number, address = '0.0.0.0', port = 0): Buffer {
  const v6 = isIPv6(address);
  const head = Buffer.from([VERSION, rep, 0x00, v6 ? ATYP_IPV6 : ATYP_IPV4]);
  const addr = v6 ? ipv6Bytes(address) : Buffer.from(address.split('.').map(Number));
  const portBytes = Buffer.alloc(2);
  portBytes.writeUInt16BE(port);
  return Buffer.concat([head, addr, portBytes]);
}

/** 16 bytes of an IPv6 address in any textual form ("::1", "fe80::1%eth0", "::ffff:1.2.3.4"). */
export function ipv6Bytes(address: string): Buffer {
  let text = address.split('%')[0] ?? '';
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [left = '', right] = text.split('::');
  const l = left ? left.split(':') : [];
  const r = right ? right.split(':') : [];
  const groups = right === undefined ? l : [...l, ...Array<string>(8 - l.length - r.length).fill('0'), ...r];
  const out = Buffer.alloc(16);
  groups.forEach((g, i) => {
    out.writeUInt16BE(Number.parseInt(g, 16), i * 2);
  });
  return out;
}

const socksAnswer: TunnelAnswer = {
  established: (client, upstream) =>
    void client.write(socksReply(Reply.succeeded, upstream.localAddress, upstream.localPort)),
  failed: (client, status, code) => closeWith(client, socksReply(replyForFailure(status, code))),
};

function closeWith(client: Socket, bytes: Buffer): void {
  if (client.destroyed) return;
  client.end(bytes);
  client.once('finish', () => client.destroy());
}

type Parsed<T> = { value: T; used: number } | 'more' | 'bad';

function parseGreeting(buf: Buffer): Parsed<number[]> {
  if (buf.length < 2) return 'more';
  const n = buf[1] ?? 0;
  if (buf[0] !== VERSION || n === 0) return 'bad';
  if (buf.length < 2 + n) return 'more';
  return { value: [...buf.subarray(2, 2 + n)], used: 2 + n };
}

function parseUserPass(buf: Buffer): Parsed<string> {
  if (buf.length < 2) return 'more';
  if (buf[0] !== AUTH_VERSION) return 'bad';
  const ulen = buf[1] ?? 0;
  if (buf.length < 3 + ulen) return 'more';
  const plen = buf[2 + ulen] ?? 0;
  const used = 3 + ulen + plen;
  if (buf.length < used) return 'more';
  const user = buf.subarray(2, 2 + ulen).toString('utf8');
  const pass = buf.subarray(3 + ulen, used).toString('utf8');
  return { value: `${user}:${pass}`, used };
}

interface SocksRequest {
  cmd: number;
  host: string;
  port: number;
}

function parseRequest(buf: Buffer): Parsed<SocksRequest | { unsupportedAddress: true }> {
  if (buf.length < 5) return 'more';
  if (buf[0] !== VERSION || buf[2] !== 0x00) return 'bad';
  const atyp = buf[3];
  const addrLen =
    atyp === ATYP_IPV4 ? 4 : atyp === ATYP_IPV6 ? 16 : atyp === ATYP_DOMAIN ? 1 + (buf[4] ?? 0) : -1;
  if (addrLen < 0) return { value: { unsupportedAddress: true }, used: buf.length };
  const used = 4 + addrLen + 2;
  if (buf.length < used) return 'more';
  const addr = buf.subarray(4, 4 + addrLen);
  const host =
    atyp === ATYP_IPV4
      ? [...addr].join('.')
      : atyp === ATYP_IPV6
        ? Array.from({ length: 8 }, (_, i) => addr.readUInt16BE(i * 2).toString(16)).join(':')
        : addr.subarray(1).toString('utf8');
  return { value: { cmd: buf[1] ?? 0, host, port: buf.readUInt16BE(4 + addrLen) }, used };
}

/**
 * Serves one client connection. Its whole handshake must arrive within `headersTimeoutMs` (as a
 * request head must on the HTTP side), so a client trickling bytes cannot hold a socket forever.
 */
export function serveSocks5(ctx: ProxyContext, counters: ProxyCounters, client: Socket): void {
  let buf: Buffer = Buffer.alloc(0);
  let step: 'greeting' | 'auth' | 'request' | 'waiting' = 'greeting';
  const deadline = setTimeout(() => {
    counters.badRequests++;
    client.destroy();
  }, ctx.headersTimeoutMs);
  client.once('close', () => clearTimeout(deadline));

  const bad = () => {
    counters.badRequests++;
    clearTimeout(deadline);
    client.destroy();
  };
  const refuse = (rep: number) => {
    counters.badRequests++;
    clearTimeout(deadline);
    closeWith(client, socksReply(rep));
  };

  function advance(): void {
    while (step !== 'waiting') {
      if (step === 'greeting') {
        const g = parseGreeting(buf);
        if (g === 'more') return;
        if (g === 'bad') return void bad();
        buf = buf.subarray(g.used);
        // An open proxy takes "no auth"; one with credentials insists on username/password.
        const open = ctx.authorize(undefined) === true;
        const method =
          open && g.value.includes(NO_AUTH) ? NO_AUTH : g.value.includes(USER_PASS) ? USER_PASS : null;
        if (method === null) {
          counters.authFailures++;
          clearTimeout(deadline);
          return void closeWith(client, Buffer.from([VERSION, NO_ACCEPTABLE]));
        }
        client.write(Buffer.from([VERSION, method]));
        step = method === USER_PASS ? 'auth' : 'request';
      } else if (step === 'auth') {
        const a = parseUserPass(buf);
        if (a === 'more') return;
        if (a === 'bad') return void bad();
        buf = buf.subarray(a.used);
        step = 'waiting';
        const verdict = ctx.authorize(`Basic ${Buffer.from(a.value, 'utf8').toString('base64')}`);
        const proceed = (ok: boolean) => {
          if (client.destroyed) return;
          if (!ok) {
            counters.authFailures++;
            clearTimeout(deadline);
            return void closeWith(client, Buffer.from([AUTH_VERSION, 0x01]));
          }
          client.write(Buffer.from([AUTH_VERSION, 0x00]));
          step = 'request';
          advance();
        };
        if (typeof verdict === 'boolean') return void proceed(verdict);
        verdict.then(proceed, () => proceed(false));
        return;
      } else {
        const r = parseRequest(buf);
        if (r === 'more') return;
        if (r === 'bad') return void bad();
        if ('unsupportedAddress' in r.value) return void refuse(Reply.addressTypeNotSupported);
        if (r.value.cmd !== CMD_CONNECT) return void refuse(Reply.commandNotSupported);
        if (r.value.port === 0 || r.value.host === '') return void refuse(Reply.generalFailure);
        if (!ctx.connectAllowed(r.value.port)) {
          counters.forbidden++;
          clearTimeout(deadline);
          return void closeWith(client, socksReply(Reply.notAllowedByRuleset));
        }
        const head = buf.subarray(r.used);
        step = 'waiting';
        clearTimeout(deadline);
        // Bytes sent after the request wait in the paused socket until the tunnel pipes it.
        client.pause();
        client.removeListener('data', onData);
        counters.tunnels++;
        openTunnel(ctx, client, Buffer.from(head), { host: r.value.host, port: r.value.port }, socksAnswer);
        return;
      }
    }
  }

  function onData(chunk: Buffer): void {
    buf = buf.length === 0 ? chunk : Buffer.concat([buf, chunk]);
    // A SOCKS handshake is a few hundred bytes at most; anything bigger is not one.
    if (buf.length > 1024) return void bad();
    advance();
  }
  client.on('data', onData);
}
