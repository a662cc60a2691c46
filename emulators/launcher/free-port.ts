import { createServer } from 'node:net';

// Linux often hands the port just released by bind(0) to the next bind(0): two calls in a row could return
// the same number, and two emulators would race for one port (the loser exits, the winner answers both
// readiness checks). Ports handed out by this process are remembered so that no caller gets one twice.
const handedOut = new Set<string>();
const MAX_TRIES = 50;

function bindZero(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, host, () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === 'object' && addr ? resolve(addr.port) : reject(new Error('no port'))));
    });
  });
}

/** A port that was free a moment ago on `host` and that this process has not handed out before
 *  (tests use these so they can run beside `npm start`). */
export async function freePort(host = '127.0.0.1'): Promise<number> {
  for (let i = 0; i < MAX_TRIES; i++) {
    const port = await bindZero(host);
    const key = `${host}:${port}`;
    if (handedOut.has(key)) continue;
    handedOut.add(key);
    return port;
  }
  throw new Error(`no fresh free port on ${host} after ${MAX_TRIES} tries`);
}
