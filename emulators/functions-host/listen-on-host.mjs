// Preloaded (`node --import`) into a hosted function: the functions-framework CLI calls
// `server.listen(port)` with no host, i.e. on every interface, and has no option to change that. The
// local plane's functions take unauthenticated Pub/Sub pushes (reconcile, gc, …), so they must listen on
// firebase.json's `emulators.functions.host` (loopback) like every other piece of the plane. This binds
// the listen of the function's own port, when it names no host, to PROXYPLANE_FUNCTION_HOST; any other
// listen is left alone.
import { Server } from 'node:net';

const host = process.env.PROXYPLANE_FUNCTION_HOST;
const port = process.env.PROXYPLANE_FUNCTION_PORT;
if (host && port) {
  const listen = Server.prototype.listen;
  Server.prototype.listen = function (...args) {
    const first = args[0];
    const isPort = typeof first === 'number' || (typeof first === 'string' && /^\d+$/.test(first));
    if (isPort && String(first) === port && typeof args[1] !== 'string') args.splice(1, 0, host);
    return listen.apply(this, args);
  };
}
