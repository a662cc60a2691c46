// Linux refuses a bind of 127.x.y.z:P while anything listens on P on the wildcard address (0.0.0.0, or
// a dual-stack ::) — Debian's squid on 3128, say, started by systemd once a test apt-installed it. Every
// instance address then fails alike, so moving a VM to the next one cannot help, and connections to
// any 127.x.y.z:P reach that listener: crawlers' traffic through a proxy that is not ours. A bind on
// addresses nothing of ours holds tells the wildcard holder apart from one busy address.
import { createServer } from 'node:net';

/** Whether `address:port` refuses a bind as taken (EADDRINUSE); other failures are not an answer. */
function taken(address: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', (err: NodeJS.ErrnoException) => resolve(err.code === 'EADDRINUSE'));
    probe.listen({ host: address, port, exclusive: true }, () => probe.close(() => resolve(false)));
  });
}

/**
 * A random loopback address outside 127.0.0.0/16 (the default instance range), never a .0 or .255:
 * random, so that two emulators probing at once, or a process on one fixed address, do not answer it.
 */
function strayLoopback(): string {
  const pick = (lo: number, hi: number) => lo + Math.floor(Math.random() * (hi - lo + 1));
  return `127.${pick(1, 254)}.${pick(0, 255)}.${pick(1, 254)}`;
}

/**
 * True when something listens on `port` on the wildcard address: two stray loopback addresses are both
 * refused as taken. Listeners on single addresses would have to hold both of ~16 million by chance.
 */
export async function heldOnWildcard(port: number): Promise<boolean> {
  for (let i = 0; i < 2; i++) if (!(await taken(strayLoopback(), port))) return false;
  return true;
}

/** What a VM's proxy error and `npm start` say about it. */
export const wildcardHolderMessage = (port: number) =>
  `port ${port} is held on the wildcard address (0.0.0.0 or ::) by another process, so no 127.x.y.z ` +
  `can listen on it and connections to 127.x.y.z:${port} reach that process (a system squid? ` +
  `\`ss -ltnp 'sport = :${port}'\` names it)`;
