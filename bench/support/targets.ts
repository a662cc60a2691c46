// Local target pages for tests: an HTTP and an HTTPS server (a self-signed certificate made at test
// time with openssl) that echo what they received, plus a streaming endpoint for long tunnels.
import { writeFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { join } from 'node:path';
import { selfSignedCert } from '../../emulators/forward-proxy/testing.js';
import { tempDir } from '../../test/support/temp-dirs.js';

export interface Targets {
  readonly httpPort: number;
  readonly httpsPort: number;
  /** PEM of the HTTPS server's self-signed certificate (CN/SAN localhost, 127.0.0.1). */
  readonly cert: string;
  readonly certPath: string;
  close(): Promise<void>;
}

function handler(req: http.IncomingMessage, res: http.ServerResponse): void {
  if (req.url?.startsWith('/stream')) {
    res.writeHead(200, { 'content-type': 'application/octet-stream' });
    const timer = setInterval(() => res.write('x'.repeat(1024)), 20);
    res.on('close', () => clearInterval(timer));
    return;
  }
  const chunks: Buffer[] = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const body = JSON.stringify({
      method: req.method,
      url: req.url,
      // Who connected: through a proxy VM of the Compute emulator, the VM's own address.
      remote: req.socket.remoteAddress,
      host: req.headers.host,
      proxyAuthorization: req.headers['proxy-authorization'] ?? null,
      headers: req.headers,
      body: Buffer.concat(chunks).toString(),
    });
    res.writeHead(req.url?.startsWith('/teapot') ? 418 : 200, {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(body),
      'x-target': 'yes',
    });
    res.end(body);
  });
}

export async function startTargets(): Promise<Targets> {
  // The one self-signed certificate maker (emulators/forward-proxy/testing.ts); the PEM is also written to
  // a file for clients that take a CA path.
  const { key, cert } = await selfSignedCert();
  const certPath = join(tempDir('gw-targets-'), 'cert.pem');
  writeFileSync(certPath, cert);
  const sockets = new Set<Socket>();
  const track = (s: Socket) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  };
  const h = http.createServer(handler).on('connection', track);
  const s = https.createServer({ key, cert }, handler).on('connection', track);
  await Promise.all([
    new Promise<void>((r) => h.listen(0, '127.0.0.1', r)),
    new Promise<void>((r) => s.listen(0, '127.0.0.1', r)),
  ]);
  return {
    httpPort: (h.address() as AddressInfo).port,
    httpsPort: (s.address() as AddressInfo).port,
    cert,
    certPath,
    close: async () => {
      for (const sock of sockets) sock.destroy();
      await Promise.all([new Promise((r) => h.close(r)), new Promise((r) => s.close(r))]);
    },
  };
}
