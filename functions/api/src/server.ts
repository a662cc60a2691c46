// Starts the app on a real socket: main.ts uses it, and so do end-to-end tests that want the API in-process
// (port 0 picks a free port). close() drops every connection at once so that tests end promptly;
// shutdown() is main.ts's graceful stop on SIGTERM. Both then wait (bounded) for the handlers still running:
// a client that went away closes its response, not its handler, whose store calls go on — after the
// caller's next step, terminating the Firestore client, a read it sent was refused unhandled.
import type { ServerResponse } from 'node:http';
import type { Server } from 'node:net';
import { createAdaptorServer, type ServerType } from '@hono/node-server';
import { listenOn } from '../../../shared/src/adapters/listen.js';
import { type ApiDeps, createApp } from './app.js';

export interface ApiServer {
  url: string;
  port: number;
  /**
   * Stops listening and drops every connection at once, requests in flight included (tests); resolves once
   * the handlers still running have returned, or after CLOSE_HANDLERS_WAIT_MS. A store call a deadline cut
   * (its handler answered 503) may still be running: what it waits on is the caller's to settle.
   */
  close(): Promise<void>;
  /**
   * Stops listening and lets the requests in flight finish — a grant already committed reaches its crawler
   * — each connection closing once it has answered; idle keep-alive connections and streams (the fleet
   * page's) close at once, and whatever is still open after `graceMs` is dropped. Resolves once the
   * handlers have returned too (those whose client went away included), or at `graceMs`.
   */
  shutdown(graceMs: number): Promise<void>;
}

/** close()'s wait for running handlers: the worker routes' request budget (8 s) and one admin store call's
 * deadline (API_STORE_CALL_DEADLINE_MS, 10 s unset; tests set theirs shorter) both fit in it. */
export const CLOSE_HANDLERS_WAIT_MS = 10_000;

type Closable = ServerType & {
  closeAllConnections?: () => void;
  closeIdleConnections?: () => void;
};

export interface StartApiServerOptions {
  port?: number;
  host?: string;
  deps: ApiDeps;
}

export async function startApiServer({
  port = 0,
  host = '127.0.0.1',
  deps,
}: StartApiServerOptions): Promise<ApiServer> {
  const app = createApp(deps);
  const handlers = runningHandlers();
  // hostname: what a request's URL is built on when it names no Host (HTTP/1.0), as serve() passed it.
  const server = createAdaptorServer({
    fetch: (...args: Parameters<typeof app.fetch>) => handlers.track(() => app.fetch(...args)),
    hostname: host,
  }) as Closable;
  // Longer than any client's idle keep-alive (undici: 4 s) and Google's front end (600 s is theirs, 65 s is
  // the usual advice behind a load balancer): the server never closes an idle socket in the instant a
  // client reuses it, which surfaces as UND_ERR_SOCKET under load.
  const http = server as { keepAliveTimeout?: number; headersTimeout?: number };
  http.keepAliveTimeout = 65_000;
  http.headersTimeout = 66_000;
  // The responses in flight, so that a shutdown can ask each to close its connection once answered.
  const inFlight = new Set<ServerResponse>();
  let stopping = false;
  server.on('request', (_req, res: ServerResponse) => {
    // A request that arrives on a kept-alive connection while stopping is answered, then closes it.
    if (stopping) endAfterAnswer(res);
    inFlight.add(res);
    res.once('close', () => inFlight.delete(res));
  });
  const actual = await listenOn(server as Server, port, host, (err) =>
    deps.log.error('api listener error', { error: err.message }),
  );
  const shownHost = host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${shownHost === '0.0.0.0' ? '127.0.0.1' : shownHost}:${actual}`,
    port: actual,
    close: async () => {
      await new Promise<void>((done) => {
        server.close(() => done());
        server.closeAllConnections?.();
      });
      await handlers.settled(CLOSE_HANDLERS_WAIT_MS);
    },
    shutdown: async (graceMs) => {
      const until = performance.now() + graceMs;
      await new Promise<void>((done) => {
        stopping = true;
        for (const res of inFlight) endAfterAnswer(res);
        const drop = setTimeout(() => server.closeAllConnections?.(), graceMs);
        server.close(() => {
          clearTimeout(drop);
          done();
        });
        server.closeIdleConnections?.();
      });
      await handlers.settled(Math.max(0, until - performance.now()));
    },
  };
}

/** Counts the handlers running (until the Response is returned; a stream's body after that is not one). */
function runningHandlers() {
  let running = 0;
  const waiting = new Set<() => void>();
  return {
    /** A handler that answers at once (a plain Response) is counted out at once, on node-server's sync path. */
    track(handle: () => Response | Promise<Response>): Response | Promise<Response> {
      running++;
      const done = () => {
        if (--running === 0) for (const wake of waiting) wake();
      };
      let answer: Response | Promise<Response>;
      try {
        answer = handle();
      } catch (err) {
        done();
        throw err;
      }
      if (!(answer instanceof Promise)) {
        done();
        return answer;
      }
      return answer.finally(done);
    },
    /** Resolves once none is running, or after `ms`. */
    settled(ms: number): Promise<void> {
      if (running === 0) return Promise.resolve();
      return new Promise<void>((done) => {
        const wake = () => {
          clearTimeout(timer);
          waiting.delete(wake);
          done();
        };
        const timer = setTimeout(wake, ms);
        waiting.add(wake);
      });
    },
  };
}

/**
 * Makes a response close its connection once sent (Node keeps it alive otherwise, and server.close() waits
 * for it until the keep-alive timeout). A stream already under way (the fleet page's events) is not
 * waited for: it is ended now, and its browser reconnects to another instance.
 */
function endAfterAnswer(res: ServerResponse): void {
  if (!res.headersSent) res.setHeader('Connection', 'close');
  else if (!res.writableEnded) res.socket?.destroy();
}
