// Which address a proxy's connection to a target leaves from. An emulated VM egresses from its own
// 127.x.y.z so that origins (and the probe's EGRESS tier) see its address, as they see a VM's external
// IP — but Linux refuses a loopback source towards any address off the machine (connect: EINVAL), and an
// IPv4 source cannot be bound to an IPv6 socket at all (bind: EINVAL, `::1` included). Bound everywhere,
// every public site and every IPv6 target answered 502 through `npm start`'s proxies.
import { isIPv4 } from 'node:net';

/** `own` for an IPv4 loopback destination (127/8); otherwise undefined: the machine's default source. */
export function sourceAddressFor(destination: string, own: string | undefined): string | undefined {
  return own !== undefined && isIPv4(destination) && destination.startsWith('127.') ? own : undefined;
}
