// One absolute-form plain-HTTP request to an upstream that filters destinations itself, over the
// upstream's kept-alive connections (upstream-pool.ts). Node's HTTP client frames both hops of the
// upstream exchange; the client's side keeps the listener's semantics: the response head minus the
// upstream hop's fields, `Connection: close`, and the body framed so that the client can tell a cut-off
// body from a complete one (response-head.ts).
//
// A kept-alive connection the upstream closed just as the request went out fails with nothing received:
// an idempotent request without a body (GET, HEAD) is then sent once more on a fresh connection (the
// retry Node's docs describe for `request.reusedSocket`); anything else fails as it would have before.
import http, { type ClientRequest, type IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type { OutcomeStage } from './outcomes.js';
import {
  bodyFraming,
  clientResponseHead,
  codedBeyondChunked,
  isGatewayField,
  isProxyChallenge,
  isProxyErrorPage,
  MAX_RESPONSE_HEAD_BYTES,
} from './response-head.js';
import { resendableOnFresh, type UpstreamPool } from './upstream-pool.js';

/** The session side (proxy-session.ts): its accounting and its client socket. */
export interface ForwardOwner {
  readonly client: Socket;
  /** The request has a connection to the upstream (new and connected, or taken from the pool). */
  forwardConnected(): void;
  /** Failed before any byte of a response went to the client. */
  forwardFailed(stage: OutcomeStage, status: number, code: string, upstreamStatus?: number): void;
  /**
   * A response head arrived; false when the session refused it instead (the upstream's 407).
   * `proxyChallenge`: a 407 carrying Proxy-Authenticate — the upstream's own challenge, not the target's.
   */
  forwardResponse(status: number, proxyChallenge: boolean, proxyErrorPage: boolean): boolean;
  /** The response went out whole and the client's side was ended. */
  forwardDone(): void;
  /** The upstream broke off after the response began: the client is reset, so it sees the truncation. */
  forwardBroken(): void;
  /** The upstream took the request body written so far. */
  bodyDrained(): void;
}

export interface ForwardRequest {
  host: string;
  port: number;
  method: string;
  /** Absolute-form target: http://host[:port]/path */
  url: string;
  /** Flat [name, value, …], our credentials for the upstream included (head.ts forwardedHeaders). */
  headers: string[];
  /** Those credentials as the Proxy-Authorization value ("" for none): which pooled connections it may ride. */
  authorization: string;
  /** Content-Length of the client's request body: 0 = none. */
  bodyLength: number;
  clientHttp11: boolean;
  /**
   * How long the retry's fresh connection may take to connect (GATEWAY_UPSTREAM_TIMEOUT_MS): past it, a
   * DIAL failure, 504 `upstream_timeout`. The first dial is bounded by the session's DIAL deadline; the
   * retry comes after the session was told it had a connection, when only the idle timeout (300 s) watched.
   */
  dialTimeoutMs?: number;
}

/** Methods Node's client sends without body framing when none is given (useChunkedEncodingByDefault off). */
const UNFRAMED_METHODS = new Set(['GET', 'HEAD', 'DELETE', 'OPTIONS', 'TRACE', 'CONNECT']);

/**
 * The headers as given, plus `Content-Length: 0` for a body-less request of any other method (POST, PUT,
 * PATCH) without a Content-Length of its own. Node writes the head in http.request when the headers are a
 * flat array, before `end()` could tell it the body is empty: such a request went upstream as
 * `Transfer-Encoding: chunked` and a `0` chunk — framing the client never sent, where the pinned path
 * forwards none and the listener refuses chunked bodies from clients.
 */
export function withEmptyBodyFraming(method: string, headers: string[]): string[] {
  if (UNFRAMED_METHODS.has(method.toUpperCase())) return headers;
  for (let i = 0; i < headers.length; i += 2)
    if (headers[i]!.toLowerCase() === 'content-length') return headers;
  return [...headers, 'Content-Length', '0'];
}

const FWD = Symbol('plain-forward');
type Tagged<T> = T & { [FWD]?: PlainForward };
export class PlainForward {
  private req: Tagged<ClientRequest> | null = null;
  private res: Tagged<IncomingMessage> | null = null;
  /** The session was told it has a connection (once, even across a retry). */
  private connected = false;
  /** The current request's own connection is up (a retry starts over on a new one). */
  private reqConnected = false;
  /**
   * Sent again on a fresh connection after a pooled one was dropped unanswered. A DIAL failure then is
   * that fresh dial's, after the session was told it had a connection (the pooled one).
   */
  retried = false;
  private retryDial: NodeJS.Timeout | undefined;
  private rechunk = false;
  /** The response was read to its end (the socket went back to the pool) or the exchange was abandoned. */
  private finished = false;
  /** Bytes of the interim (1xx) heads of this response so far, as written for the client (onInformation). */
  private interimBytes = 0;

  constructor(
    private readonly owner: ForwardOwner,
    private readonly pool: UpstreamPool,
    private readonly r: ForwardRequest,
  ) {}

  /** Sends the head; throws (before any I/O) when Node refuses a field or the target as invalid. */
  start(): void {
    this.req = this.send(this.pool.agentFor(this.r.host, this.r.port, this.r.authorization));
  }

  private send(agent: http.Agent): Tagged<ClientRequest> {
    this.reqConnected = false;
    const req: Tagged<ClientRequest> = http.request({
      host: this.r.host,
      port: this.r.port,
      method: this.r.method,
      path: this.r.url,
      headers: this.r.bodyLength === 0 ? withEmptyBodyFraming(this.r.method, this.r.headers) : this.r.headers,
      agent,
      maxHeaderSize: MAX_RESPONSE_HEAD_BYTES,
    });
    req[FWD] = this;
    req.on('socket', onReqSocket);
    req.on('information', onReqInformation);
    req.on('response', onReqResponse);
    req.on('error', onReqError);
    req.on('drain', onReqDrain);
    req.on('close', onReqClose);
    if (this.r.bodyLength === 0) req.end();
    return req;
  }

  /** Request body bytes from the client; `last` once Content-Length bytes were given. */
  writeBody(chunk: Buffer, last: boolean): boolean {
    const req = this.req;
    if (!req || this.finished) return true;
    const more = req.write(chunk);
    if (last) req.end();
    return more;
  }

  /**
   * The session is over. A request whose response was not read whole, or whose body the client never
   * finished (an early answer such as 413), loses its connection: it cannot be reused. So does one whose
   * body was handed over whole but never left our buffers (an upstream that answered from the head alone
   * and stopped reading): Node pools the socket only once the body is flushed, and nothing else would
   * ever close it.
   */
  abort(): void {
    clearTimeout(this.retryDial);
    const req = this.req;
    if (!req || this.settled) return;
    this.finished = true;
    req.destroy();
  }

  /**
   * Nothing of this exchange is left on its connection: it is over (its response read to the end, or it
   * was abandoned and Node destroyed the socket) and the request body left whole — a connection whose
   * response ended first still has our body queued on it.
   */
  get settled(): boolean {
    return this.finished && this.req?.writableFinished === true;
  }

  onSocket(s: Socket): void {
    if (!s.connecting) this.connectedNow();
    // A new connection: one listener for its first connect (pooled connections never come here again).
    else s.once('connect', () => this.connectedNow());
  }

  private connectedNow(): void {
    this.reqConnected = true;
    clearTimeout(this.retryDial);
    if (this.connected || this.finished) return;
    this.connected = true;
    this.owner.forwardConnected();
  }

  /** No answer to relay (a bad head, a flood of 1xx, a mislabelled body): a 502, the connection destroyed. */
  private refuseAnswer(): void {
    this.finished = true;
    this.req?.destroy();
    this.owner.forwardFailed('RESPONSE_HEADERS', 502, 'target_bad_response');
  }

  onInformation(info: http.InformationEvent): void {
    // 100 Continue (a client waiting to send its body) and 103 Early Hints go through, to an HTTP/1.1
    // client only: a server MUST NOT send a 1xx to an HTTP/1.0 one (RFC 9110 §15.2). Node never
    // reports a 101 here: with no 'upgrade' listener it destroys the socket (onReqClose) — or, for one
    // without `Connection: upgrade`, reads it as a final answer (onResponse).
    if (this.finished || info.statusCode === 101) return;
    const head = clientResponseHead(info.statusCode, info.statusMessage, info.rawHeaders, 'interim');
    // Node bounds each head (maxHeaderSize), not how many 1xx heads come before the final one: a target
    // sending `100 Continue` forever had every head queued for the client, without end for one that does
    // not read. Together they get the one response-head limit; past it the response is a bad one (a final
    // 502 after 1xx heads is still well-formed). Counted for an HTTP/1.0 client too, which gets none of
    // them: such a flood is no answer either way.
    this.interimBytes += head.length;
    if (this.interimBytes > MAX_RESPONSE_HEAD_BYTES) {
      this.refuseAnswer();
      return;
    }
    if (this.r.clientHttp11) this.owner.client.write(head, 'latin1');
  }

  onResponse(res: Tagged<IncomingMessage>): void {
    if (this.finished) {
      res.destroy();
      return;
    }
    const status = res.statusCode ?? 0;
    if (status < 200) {
      // A 101 without `Connection: upgrade` (as squid 3.2–4 forwards one, hop-by-hop fields dropped): Node
      // reads it as a whole, body-less answer and pools the connection, on which the upstream then sends
      // the target's next answer — read as the answer to whatever request rides that connection next,
      // another client's. No answer of ours: the connection is destroyed before it can be pooled.
      this.refuseAnswer();
      return;
    }
    const te = res.headers['transfer-encoding'];
    // Node upper-cases the method it sends (http.request), so "head" went out as HEAD: no body follows.
    const noBody = this.r.method.toUpperCase() === 'HEAD' || status === 204 || status === 304;
    const framing = bodyFraming(te, noBody, this.r.clientHttp11);
    if (framing === 'dechunked' && codedBeyondChunked(te)) {
      // De-chunked for an HTTP/1.0 client, the field goes and the gzip under it with no label: no answer.
      this.refuseAnswer();
      return;
    }
    if (!this.owner.forwardResponse(status, isProxyChallenge(res), isProxyErrorPage(res))) return;
    this.res = res;
    res[FWD] = this;
    this.rechunk = framing === 'rechunk';
    const c = this.owner.client;
    // The body that came in the same read as the head is emitted on the next tick (when 'data' resumes
    // the stream): corked until then, head and body leave in one write instead of two.
    c.cork();
    c.write(clientResponseHead(status, res.statusMessage ?? '', res.rawHeaders, framing), 'latin1');
    res.on('data', onResData);
    res.on('end', onResEnd);
    res.on('close', onResClose);
    process.nextTick(uncork, c);
  }

  onData(chunk: Buffer): void {
    const c = this.owner.client;
    let more: boolean;
    if (this.rechunk) {
      c.cork();
      c.write(`${chunk.length.toString(16)}\r\n`, 'latin1');
      c.write(chunk);
      more = c.write('\r\n', 'latin1');
      c.uncork();
    } else more = c.write(chunk);
    if (!more) {
      this.res!.pause();
      c.once('drain', () => this.res?.resume());
    }
  }

  onEnd(): void {
    const c = this.owner.client;
    if (this.rechunk) {
      const t = this.res!.rawTrailers;
      let last = '0\r\n';
      for (let i = 0; i < t.length; i += 2)
        if (!isGatewayField(t[i]!.toLowerCase())) last += `${t[i]}: ${t[i + 1]}\r\n`;
      c.write(`${last}\r\n`, 'latin1');
    }
    this.finished = true;
    this.owner.forwardDone();
  }

  onResClose(): void {
    if (!this.res!.complete) this.broken();
  }

  onError(err: NodeJS.ErrnoException): void {
    if (this.finished) return;
    if (this.res) {
      this.broken();
      return;
    }
    const req = this.req!;
    const code = err.code ?? '';
    if (
      req.reusedSocket &&
      !this.retried &&
      this.r.bodyLength === 0 &&
      resendableOnFresh(this.r.method, code)
    ) {
      // The pooled connection was closed under us and nothing came back: the upstream never took the
      // request. Its other idle connections are likely as old, so they go too.
      this.retried = true;
      this.pool.dropIdle(this.r.host, this.r.port);
      this.req = this.send(this.pool.fresh);
      const ms = this.r.dialTimeoutMs;
      if (ms !== undefined) this.retryDial = setTimeout(() => this.retryDialTimedOut(), ms);
      return;
    }
    this.finished = true;
    if (!this.reqConnected) this.owner.forwardFailed('DIAL', 502, 'upstream_dial_failed');
    else if (code.startsWith('HPE_'))
      this.owner.forwardFailed('RESPONSE_HEADERS', 502, 'target_bad_response');
    else if (code === 'ECONNRESET') this.owner.forwardFailed('RESPONSE_HEADERS', 502, 'target_closed');
    else this.owner.forwardFailed('RESPONSE_HEADERS', 502, 'target_failed');
  }

  private retryDialTimedOut(): void {
    if (this.reqConnected || this.finished) return;
    this.finished = true;
    this.req?.destroy();
    this.owner.forwardFailed('DIAL', 504, 'upstream_timeout');
  }

  /**
   * The request closed. Normally after its response or its error; with neither, Node met an upgrade
   * (a 101, which no request of ours asked for), destroyed the socket and said nothing else: without
   * this the client waited for bytes that never came and the slot was held until the idle timeout.
   */
  onReqClose(req: ClientRequest): void {
    if (this.finished || this.res || req !== this.req) return;
    this.finished = true;
    this.owner.forwardFailed('RESPONSE_HEADERS', 502, 'target_bad_response');
  }

  private broken(): void {
    if (this.finished) return;
    this.finished = true;
    this.req?.destroy();
    this.owner.forwardBroken();
  }

  onDrain(): void {
    this.owner.bodyDrained();
  }
}

function uncork(c: Socket): void {
  // end() may have uncorked it already (a response read whole in that tick).
  if (c.writableCorked > 0) c.uncork();
}

// Listeners created once at module load: `this` is the request or response, the forward hangs off FWD.
function onReqSocket(this: Tagged<ClientRequest>, s: Socket): void {
  this[FWD]!.onSocket(s);
}
function onReqInformation(this: Tagged<ClientRequest>, info: http.InformationEvent): void {
  this[FWD]!.onInformation(info);
}
function onReqResponse(this: Tagged<ClientRequest>, res: IncomingMessage): void {
  this[FWD]!.onResponse(res);
}
function onReqError(this: Tagged<ClientRequest>, err: Error): void {
  this[FWD]!.onError(err);
}
function onReqClose(this: Tagged<ClientRequest>): void {
  this[FWD]!.onReqClose(this);
}
function onReqDrain(this: Tagged<ClientRequest>): void {
  this[FWD]!.onDrain();
}
function onResData(this: Tagged<IncomingMessage>, chunk: Buffer): void {
  this[FWD]!.onData(chunk);
}
function onResEnd(this: Tagged<IncomingMessage>): void {
  this[FWD]!.onEnd();
}
function onResClose(this: Tagged<IncomingMessage>): void {
  this[FWD]!.onResClose();
}
