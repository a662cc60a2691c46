// Connections to targets from a proxy with an own address (an emulated VM): the target is resolved
// first, so that the source can be chosen for the address it resolved to (source-address.ts); the
// connect then takes what was resolved instead of asking DNS again. A proxy without an own address
// connects as node does by itself.
import { type LookupAddress, lookup } from 'node:dns';
import type { Agent } from 'node:http';
import { connect, type LookupFunction, type TcpNetConnectOpts } from 'node:net';
import { sourceAddressFor } from './source-address.js';

export type Route = Pick<TcpNetConnectOpts, 'localAddress' | 'lookup'>;

/** Answers with addresses already resolved, always later (dns.lookup never calls back synchronously). */
function answering(addresses: LookupAddress[]): LookupFunction {
  const [first] = addresses as [LookupAddress];
  return (_host, options, callback) =>
    process.nextTick(() =>
      options.all ? callback(null, addresses) : callback(null, first.address, first.family),
    );
}

/**
 * How to reach `host` from `own`. Without an own address, at once and empty: node's connect as is. With
 * one, after a lookup; several addresses stay several, so that node's happy eyeballs still tries each
 * (it does only when no source is bound, which is when it matters: off the machine).
 */
export function routeTo(
  host: string,
  own: string | undefined,
  done: (err: NodeJS.ErrnoException | null, route: Route) => void,
): void {
  if (own === undefined) {
    done(null, {});
    return;
  }
  lookup(host, { all: true }, (err, addresses) => {
    if (err) done(err, {});
    else
      done(null, {
        localAddress: sourceAddressFor(addresses[0]!.address, own),
        lookup: answering(addresses),
      });
  });
}

/** The `createConnection` of the agent pooling a VM's origin connections (forward.ts). */
export function connectionFrom(own: string): Agent['createConnection'] {
  return (options, created) => {
    const target = options as TcpNetConnectOpts;
    routeTo(target.host ?? 'localhost', own, (err, route) => {
      if (err) created?.(err, undefined as never);
      else created?.(null, connect({ ...target, ...route }));
    });
    return undefined;
  };
}
