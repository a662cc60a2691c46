// Binds a server and keeps it alive past its bind. An error before it listens (EADDRINUSE, EACCES)
// rejects the start; any later one — an accept failure (ENFILE, ENOMEM) — goes to `onError`: a net.Server
// with no 'error' listener would end the process on it, and every connection in flight with it.
import type { AddressInfo, Server } from 'node:net';

/** Listens on host:port (0: any free port); resolves the port bound. */
export function listenOn(
  server: Server,
  port: number,
  host: string,
  onError: (err: Error) => void,
): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port, host }, () => {
      server.off('error', reject);
      server.on('error', onError);
      resolve((server.address() as AddressInfo).port);
    });
  });
}
