// A minimal crawler: lease a proxy, fetch a page through it, report how it went, release the lease.
//
//   PROXYPLANE_URL=http://127.0.0.1:18300 PROXYPLANE_TOKEN=… \
//     node --import tsx docs/examples/crawler.ts http://127.0.0.1:18320/ [attr=value …]
//
// Without PROXYPLANE_URL / PROXYPLANE_TOKEN it reads PROXYPLANE_API_URL / PROXYPLANE_CRAWLER_TOKEN, the
// variables `npm start` prints as export lines.
//
// The local demo site's HTTPS port has a self-signed certificate (the plane keeps it in
// .local-plane/demo-target/cert.pem): trust it as curl's --cacert does, or the fetch fails with
// "self-signed certificate" (docs/leases.md):
//
//   NODE_EXTRA_CA_CERTS=.local-plane/demo-target/cert.pem node --import tsx docs/examples/crawler.ts https://127.0.0.1:18321/
//
// Through an HTTP proxy (an http:// proxy URL), plain http:// targets go as absolute-URI requests and
// https:// targets through a CONNECT tunnel with TLS inside it. Through a SOCKS5 proxy (a socks5:// URL,
// docs/leases.md) both go through a SOCKS5 CONNECT (the `socks` package), TLS inside it for https. Since
// it speaks both, it asks for both (`protocols`): SOCKS5 proxies are leased only to crawlers that do.
// A 429 is reported as rate_limited and a 403 as banned, which keeps this proxy away from that site for
// the cooldown window; anything else that answered is ok. The proxy's own refusals (a CONNECT it refuses,
// squid's error page) are thrown, never reported against the site.
import { realpathSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { isIP, type Socket } from 'node:net';
import tls from 'node:tls';
import { pathToFileURL } from 'node:url';
import { SocksClient } from 'socks';
import { LeaseClient, NoMatchError } from '../../shared/src/client/index.js';

interface Page {
  status: number;
  body: string;
}

function proxyAuthorization(proxy: URL): Record<string, string> {
  if (!proxy.username) return {};
  const userinfo = `${decodeURIComponent(proxy.username)}:${decodeURIComponent(proxy.password)}`;
  return { 'proxy-authorization': `Basic ${Buffer.from(userinfo).toString('base64')}` };
}

/** TLS to the target over `socket`, its certificate checked for the target's host; SNI only for a name. */
function tlsTo(url: URL, socket: Socket): tls.TLSSocket {
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  // RFC 6066 allows no IP address in SNI (Node warns, and will ignore it).
  return tls.connect({ socket, host, ...(isIP(host) ? {} : { servername: host }) });
}

function collect(res: http.IncomingMessage): Promise<Page> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    res.on('data', (c: Buffer) => chunks.push(c));
    res.on('end', () =>
      resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }),
    );
    res.on('error', reject);
  });
}

/** Over a SOCKS5 proxy: CONNECT to the target's host and port, then the request as to the site itself. */
async function fetchThroughSocks5(
  proxy: URL,
  url: URL,
  signal: AbortSignal,
  timeoutMs: number,
): Promise<Page> {
  const https = url.protocol === 'https:';
  const { socket } = await SocksClient.createConnection({
    proxy: {
      host: proxy.hostname.replace(/^\[(.*)\]$/, '$1'),
      port: Number(proxy.port) || 1080,
      type: 5,
      ...(proxy.username
        ? { userId: decodeURIComponent(proxy.username), password: decodeURIComponent(proxy.password) }
        : {}),
    },
    command: 'connect',
    destination: {
      host: url.hostname.replace(/^\[(.*)\]$/, '$1'),
      port: Number(url.port) || (https ? 443 : 80),
    },
    timeout: timeoutMs,
  }).catch((err: unknown) => {
    // The socks package's errors carry the connect options, password included, as an own field that
    // console.error and loggers print: keep the message alone.
    throw new Error(`SOCKS5 proxy: ${err instanceof Error ? err.message : String(err)}`);
  });
  const req = http.request({
    method: 'GET',
    path: `${url.pathname}${url.search}`,
    headers: { host: url.host, connection: 'close' },
    createConnection: () => (https ? tlsTo(url, socket) : socket),
    signal,
  });
  req.end();
  return collect(
    await new Promise<http.IncomingMessage>((ok, fail) => req.on('response', ok).on('error', fail)),
  );
}

export async function fetchThroughProxy(proxyUrl: string, target: string, timeoutMs = 30_000): Promise<Page> {
  const proxy = new URL(proxyUrl);
  const url = new URL(target);
  const signal = AbortSignal.timeout(timeoutMs);
  if (proxy.protocol === 'socks5:') return fetchThroughSocks5(proxy, url, signal, timeoutMs);
  // An IPv6 proxy's hostname keeps its brackets ([::1]), which no socket connect resolves.
  const proxyHost = proxy.hostname.replace(/^\[(.*)\]$/, '$1');
  if (url.protocol === 'http:') {
    const req = http.request({
      host: proxyHost,
      port: proxy.port,
      method: 'GET',
      path: url.href,
      headers: { host: url.host, ...proxyAuthorization(proxy) },
      signal,
    });
    req.end();
    const res = await new Promise<http.IncomingMessage>((ok, fail) =>
      req.on('response', ok).on('error', fail),
    );
    // squid's own error page (a port outside its Safe_ports, a destination it refuses): the proxy's answer,
    // not the site's — thrown, as a refused tunnel is, so its 403 is never reported `banned`.
    const squidError = res.headers['x-squid-error'];
    if (squidError !== undefined) {
      res.resume();
      throw new Error(`proxy refused the request to ${url.host}: HTTP ${res.statusCode} (${squidError})`);
    }
    return collect(res);
  }
  // https: open a tunnel, then speak TLS to the target through it.
  const connect = http.request({
    host: proxyHost,
    port: proxy.port,
    method: 'CONNECT',
    path: `${url.hostname}:${url.port || 443}`,
    headers: { host: `${url.hostname}:${url.port || 443}`, ...proxyAuthorization(proxy) },
    signal,
  });
  connect.end();
  const [res, socket] = await new Promise<[http.IncomingMessage, Socket]>((ok, fail) =>
    connect.on('connect', (r, s) => ok([r, s])).on('error', fail),
  );
  if (res.statusCode !== 200) {
    // The proxy's answer, not the site's (a managed proxy's squid refuses a port outside its connectPorts
    // with 403): thrown, as a refused SOCKS5 connect is, so nothing is reported against the site — a
    // `banned` here cooled the proxy down for the whole host, on the ports it does serve too.
    socket.destroy();
    throw new Error(`proxy refused the tunnel to ${url.host}: HTTP ${res.statusCode}`);
  }
  const req = https.request({
    host: url.hostname,
    path: `${url.pathname}${url.search}`,
    method: 'GET',
    // Not the default: with no agent, Node names port 80 in it (`Host: shop.example:80`).
    headers: { host: url.host },
    createConnection: () => tlsTo(url, socket),
    signal,
  });
  req.end();
  return collect(
    await new Promise<http.IncomingMessage>((ok, fail) => req.on('response', ok).on('error', fail)),
  );
}

async function main(argv = process.argv.slice(2), env = process.env): Promise<number> {
  const [target = 'http://127.0.0.1:18320/', ...attrs] = argv;
  // Also the names `npm start` exports, so pasting its export lines is all the set-up a local run needs.
  const client = new LeaseClient({
    baseUrl: env.PROXYPLANE_URL ?? env.PROXYPLANE_API_URL ?? 'http://127.0.0.1:18300',
    token: env.PROXYPLANE_TOKEN ?? env.PROXYPLANE_CRAWLER_TOKEN,
  });
  // At the first '=': a value may hold more. An argument with none would select nothing (any proxy).
  const bad = attrs.find((a) => a.indexOf('=') < 1);
  if (bad !== undefined) {
    console.error(`not an attr=value selector: ${JSON.stringify(bad)}`);
    return 64;
  }
  const selector = Object.fromEntries(
    attrs.map((a) => [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)]),
  );

  // withLease releases the lease however the crawl ends. When the fetch fails and the release fails too
  // (the API down by then), the fetch's error is the one thrown — it says what went wrong with the crawl;
  // the lease's TTL ends the lease anyway.
  try {
    return await client.withLease(
      { selector, ttlSeconds: 60, target: new URL(target).host, protocols: ['http', 'socks5'] },
      async (lease) => {
        console.error(`leased ${lease.proxy.name} until ${lease.expiresAt}`);
        const page = await fetchThroughProxy(lease.proxy.url, target);
        const result = page.status === 429 ? 'rate_limited' : page.status === 403 ? 'banned' : 'ok';
        await client.report(lease.leaseId, result);
        console.error(`HTTP ${page.status}, ${page.body.length} characters, reported ${result}`);
        process.stdout.write(page.body);
        return page.status < 400 ? 0 : 1;
      },
    );
  } catch (err) {
    // Only the acquire answers no_match: nothing was leased.
    if (err instanceof NoMatchError) {
      // Left out for cooldowns only: the answer says when one is leasable again for this target.
      const wait = err.retryAfterSeconds === undefined ? '' : ` (one is again in ${err.retryAfterSeconds} s)`;
      console.error(`no proxy available${wait}:`, JSON.stringify(err.counts));
      return 2;
    }
    throw err;
  }
}

// Run as a script, not imported: compared as file URLs of the real path (a checkout under a path with a
// space, or behind a symlink, never matched a plain "file://" + argv[1], and exited 0 having done nothing).
const script = process.argv[1];
if (script !== undefined && import.meta.url === pathToFileURL(realpathSync(script)).href) {
  main().then(
    (code) => process.exit(code),
    (err) => {
      console.error(err);
      process.exit(1);
    },
  );
}
