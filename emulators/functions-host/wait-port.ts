// Whether a port accepts TCP connections (the bench harness's servers). Not a hosted function's readiness:
// the port could be another process's (ready-file.ts).
import { connect } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

/** Whether a TCP connection to host:port is accepted within `timeoutMs`. */
export function tryConnect(host: string, port: number, timeoutMs = 1000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

export async function waitForPort(
  host: string,
  port: number,
  { timeoutMs = 60_000, intervalMs = 100 } = {},
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await tryConnect(host, port)) return;
    await sleep(intervalMs);
  }
  throw new Error(`${host}:${port} not listening after ${timeoutMs} ms`);
}
