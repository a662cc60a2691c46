// The proxy session's socket listeners, created once at module load: `this` is the socket, the session
// hangs off SESSION, so a connection allocates no closures for its events (proxy-session.ts). Each
// listener only forwards the event to the session method of the same role.
import type { Socket } from 'node:net';
import type { ProxySession } from './proxy-session.js';

export const SESSION = Symbol('proxy-session');
export type Owned = Socket & { [SESSION]?: ProxySession };

type SessionEvent =
  | 'onHeadData'
  | 'onBody'
  | 'onClientEnd'
  | 'onClientClose'
  | 'onUpConnect'
  | 'onUpData'
  | 'onUpError'
  | 'onUpEnd'
  | 'onUpClose'
  | 'onUpDrain'
  | 'onDetachedUpClose';
const relay = (method: SessionEvent) =>
  function (this: Owned, arg?: Buffer): void {
    const s = this[SESSION]!;
    (s[method] as (this: ProxySession, a?: Buffer) => void).call(s, arg);
  };
export function onClientError(): void {}
/** After a refusal: whatever the client still sends is read and dropped while the answer goes out. */
export const ignore = onClientError;
export const onClientData = relay('onHeadData');
export const onClientBody = relay('onBody');
export const onClientEnd = relay('onClientEnd');
export const onClientClose = relay('onClientClose');
export const onUpConnect = relay('onUpConnect');
export const onUpData = relay('onUpData');
export const onUpError = relay('onUpError');
export const onUpEnd = relay('onUpEnd');
export const onUpClose = relay('onUpClose');
export const onUpDrain = relay('onUpDrain');
/** An upstream socket the session has let go of (a failed dial it retried elsewhere) closing. */
export const onDetachedUpClose = relay('onDetachedUpClose');
