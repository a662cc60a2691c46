// The demo target: a small local web site that the demo's instructions fetch through a leased proxy and
// through the gateway, so that the first fetch works offline. It shows who it saw (the proxy's address)
// and which request headers arrived, which is what a person trying a proxy wants to see. The same site
// is served over HTTPS on a second port when given a certificate, so that CONNECT with TLS inside — what a
// crawler fetching https:// pages does — can be tried by hand too.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { listenOn } from '../../shared/src/adapters/listen.js';
import { jsonLineLog } from '../compute/log.js';

export interface DemoTarget {
  url: string;
  /** The HTTPS site's URL, when it was given a certificate. */
  tlsUrl?: string;
  stop(): Promise<void>;
}

export interface DemoTargetOptions {
  host: string;
  port: number;
  tls?: { port: number; key: string; cert: string };
}

const esc = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/** What the page says: the first line is what the e2e test and a person look for. */
export const GREETING = 'Hello from the proxyplane demo target';

function seen(req: IncomingMessage) {
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(req.headers)) {
    if (typeof v === 'string') headers[k] = v.slice(0, 500);
  }
  // Never echo credentials, even the proxy's (a forward proxy must strip them; if one did not, say so).
  for (const k of ['authorization', 'proxy-authorization', 'cookie'])
    if (headers[k]) headers[k] = '(redacted)';
  return {
    ip: (req.socket.remoteAddress ?? '').replace(/^::ffff:/, ''),
    method: req.method ?? 'GET',
    path: req.url ?? '/',
    headers,
  };
}

function handle(req: IncomingMessage, res: ServerResponse): void {
  const s = seen(req);
  if (s.path === '/healthz') {
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    return;
  }
  // A site pushing back, on demand: /status/429 (with Retry-After), /status/403, any 4xx or 5xx — what a
  // crawler reports as rate_limited or banned (docs/leases.md § Reports), tried on the demo site.
  const pushback = /^\/status\/([45]\d\d)(?:[/?#]|$)/.exec(s.path);
  if (pushback) {
    const status = Number(pushback[1]);
    res
      .writeHead(status, {
        'content-type': 'text/plain; charset=utf-8',
        'cache-control': 'no-store',
        ...(status === 429 ? { 'retry-after': '60' } : {}),
      })
      .end(`${status} from the proxyplane demo target, as asked (${s.path})\n`);
    return;
  }
  if (s.path.startsWith('/json') || (req.headers.accept ?? '').startsWith('application/json')) {
    res
      .writeHead(200, { 'content-type': 'application/json' })
      .end(`${JSON.stringify({ message: GREETING, ...s })}\n`);
    return;
  }
  const rows = Object.entries(s.headers)
    .map(([k, v]) => `<tr><td>${esc(k)}</td><td>${esc(v)}</td></tr>`)
    .join('');
  const body = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>proxyplane demo target</title></head>
<body style="font: 15px system-ui, sans-serif; margin: 40px">
<h1>${GREETING}</h1>
<p>This page came to you from <strong>${esc(s.ip)}</strong> — the proxy's address, not yours.</p>
<p>${esc(s.method)} ${esc(s.path)}</p>
<table>${rows}</table>
</body></html>\n`;
  res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' }).end(body);
}

const log = jsonLineLog('demo-target', (line) => process.stderr.write(line));

function listen(server: Server, host: string, port: number): Promise<number> {
  server.keepAliveTimeout = 2000;
  return listenOn(server, port, host, (err) =>
    log('ERROR', 'demo target listener error', { error: err.message }),
  );
}

const close = (server: Server) =>
  new Promise<void>((done) => {
    if (!server.listening) return done();
    server.close(() => done());
    server.closeAllConnections();
  });

export async function startDemoTarget(opts: DemoTargetOptions): Promise<DemoTarget> {
  const plain = createServer(handle);
  const secure = opts.tls ? createHttpsServer({ key: opts.tls.key, cert: opts.tls.cert }, handle) : null;
  const stop = async () => {
    await Promise.all([close(plain), secure ? close(secure) : undefined]);
  };
  try {
    const port = await listen(plain, opts.host, opts.port);
    const tlsPort = secure && opts.tls ? await listen(secure, opts.host, opts.tls.port) : null;
    return {
      url: `http://${opts.host}:${port}`,
      ...(tlsPort === null ? {} : { tlsUrl: `https://${opts.host}:${tlsPort}` }),
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
