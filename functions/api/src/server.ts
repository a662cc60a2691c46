// Starts the app on a real socket: main.ts uses it, and so do end-to-end tests that want the API in-process
// (port 0 picks a free port). close() also drops keep-alive connections so that tests end promptly.
import type { AddressInfo } from 'node:net';
import { type ServerType, serve } from '@hono/node-server';
import { type ApiDeps, createApp } from './app.js';

export interface ApiServer {
  url: string;
  port: number;
  close(): Promise<void>;
}

export interface StartApiServerOptions {
  port?: number;
  host?: string;
  deps: ApiDeps;
}

export function startApiServer({
  port = 0,
  host = '127.0.0.1',
  deps,
}: StartApiServerOptions): Promise<ApiServer> {
  const app = createApp(deps);
  return new Promise((resolve, reject) => {
    let server: ServerType;
    const onError = (err: Error) => reject(err);
    server = serve({ fetch: app.fetch, port, hostname: host }, () => {
      server.off('error', onError);
      // Longer than any client's idle keep-alive (undici: 4 s) and Google's front end (600 s is theirs,
      // 65 s is the usual advice behind a load balancer): the server never closes an idle socket in the
      // instant a client reuses it, which surfaces as UND_ERR_SOCKET under load.
      const http = server as { keepAliveTimeout?: number; headersTimeout?: number };
      http.keepAliveTimeout = 65_000;
      http.headersTimeout = 66_000;
      const actual = (server.address() as AddressInfo).port;
      const shownHost = host.includes(':') ? `[${host}]` : host;
      resolve({
        url: `http://${shownHost === '0.0.0.0' ? '127.0.0.1' : shownHost}:${actual}`,
        port: actual,
        close: () =>
          new Promise<void>((done) => {
            server.close(() => done());
            (server as { closeAllConnections?: () => void }).closeAllConnections?.();
          }),
      });
    });
    server.once('error', onError);
  });
}
