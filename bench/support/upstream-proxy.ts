// A minimal forward proxy used as the *upstream* a gateway chains to, in tests (and as a fallback in the
// bench): CONNECT tunnels and absolute-URI HTTP, Basic proxy auth. Modelled on the handbook harness's
// upstream-node.mjs; it also records the CONNECT targets it was asked for, so tests can check pinning.
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';

export interface UpstreamProxy {
  readonly port: number;
  readonly url: string;
  /** Every CONNECT authority received, in order. */
  readonly connects: string[];
  close(): Promise<void>;
}

export async function startUpstreamProxy(opts: {
  user: string;
  pass: string;
  host?: string;
}): Promise<UpstreamProxy> {
  const host = opts.host ?? '127.0.0.1';
  const expected = `Basic ${Buffer.from(`${opts.user}:${opts.pass}`).toString('base64')}`;
  const connects: string[] = [];
  const sockets = new Set<net.Socket>();
  const server = http.createServer((req, res) => {
    if (req.headers['proxy-authorization'] !== expected) {
      res.writeHead(407, { 'proxy-authenticate': 'Basic realm="up"', 'content-length': 0 }).end();
      return;
    }
    let u: URL;
    try {
      u = new URL(req.url ?? '');
    } catch {
      res.writeHead(400).end();
      return;
    }
    const headers = { ...req.headers };
    delete headers['proxy-authorization'];
    delete headers['proxy-connection'];
    const out = http.request(
      {
        host: u.hostname,
        port: u.port || 80,
        path: `${u.pathname}${u.search}`,
        method: req.method,
        headers,
        agent: false,
      },
      (r) => {
        res.writeHead(r.statusCode ?? 502, r.headers);
        r.pipe(res);
      },
    );
    out.on('error', () => res.writeHead(502).end());
    req.pipe(out);
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  });
  server.on('connect', (req, client, head) => {
    client.on('error', () => {});
    connects.push(req.url ?? '');
    if (req.headers['proxy-authorization'] !== expected) {
      client.end(
        'HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm="up"\r\nContent-Length: 0\r\n\r\n',
      );
      return;
    }
    const i = (req.url ?? '').lastIndexOf(':');
    const target = net.connect({
      host: (req.url ?? '').slice(0, i).replace(/^\[|\]$/g, ''),
      port: Number((req.url ?? '').slice(i + 1)),
    });
    target.on('error', () => {
      if (client.writable) client.end('HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n');
    });
    target.on('connect', () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head?.length) target.write(head);
      client.pipe(target);
      target.pipe(client);
      target.on('error', () => client.destroy());
      client.on('error', () => target.destroy());
      client.on('close', () => target.destroy());
      target.on('close', () => client.destroy());
    });
  });
  await new Promise<void>((r) => server.listen(0, host, r));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    url: `http://${encodeURIComponent(opts.user)}:${encodeURIComponent(opts.pass)}@${host}:${port}`,
    connects,
    close: () =>
      new Promise((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}
