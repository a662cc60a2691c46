// Readiness of a functions-framework server: it listens only once the user module has loaded and
// registered its function, so an accepted TCP connection means ready. (An HTTP probe cannot tell:
// a cloudevent function answers any GET without a body with a 500.)
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
