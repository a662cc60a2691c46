// Preloaded (`node --import`) into a hosted function: the functions-framework CLI calls
// `server.listen(port)` with no host, i.e. on every interface, and has no option to change that. The
// local plane's functions take unauthenticated Pub/Sub pushes (reconcile, gc, …), so they must listen on
// firebase.json's `emulators.functions.host` (loopback) like every other piece of the plane. This binds
// the listen of the function's own port, when it names no host, to PROXYPLANE_FUNCTION_HOST; any other
// listen is left alone. Once that listen has succeeded it writes PROXYPLANE_FUNCTION_READY_FILE: the host
// waits for that file, not for the port to accept, which another process listening there (a port taken
// between its choice and this listen) would do as well while this one died of EADDRINUSE.
import { writeFileSync } from 'node:fs';
import { Server } from 'node:net';

const host = process.env.PROXYPLANE_FUNCTION_HOST;
const port = process.env.PROXYPLANE_FUNCTION_PORT;
const readyFile = process.env.PROXYPLANE_FUNCTION_READY_FILE;
if (host && port) {
  const listen = Server.prototype.listen;
  Server.prototype.listen = function (...args) {
    const first = args[0];
    const isPort = typeof first === 'number' || (typeof first === 'string' && /^\d+$/.test(first));
    if (isPort && String(first) === port) {
      if (typeof args[1] !== 'string') args.splice(1, 0, host);
      if (readyFile) this.once('listening', () => writeFileSync(readyFile, String(process.pid)));
    }
    return listen.apply(this, args);
  };
}
