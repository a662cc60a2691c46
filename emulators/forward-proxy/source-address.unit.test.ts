import { describe, expect, it } from 'vitest';
import { sourceAddressFor } from './source-address.js';

const VM = '127.0.4.9';

describe('sourceAddressFor: a VM leaves from its own address towards loopback only', () => {
  it.each([
    ['127.0.0.1', VM, VM],
    ['127.3.2.1', VM, VM],
    // Linux refuses a loopback source off the machine (EINVAL): the default source instead
    ['93.184.215.14', VM, undefined],
    ['192.0.2.2', VM, undefined],
    ['128.0.0.1', VM, undefined],
    // an IPv4 source cannot be bound to an IPv6 socket, loopback or not
    ['::1', VM, undefined],
    ['::ffff:127.0.0.1', VM, undefined],
    ['2001:db8::1', VM, undefined],
    // a proxy with no own address never binds
    ['127.0.0.1', undefined, undefined],
    ['::1', undefined, undefined],
  ])('%s from %s → %s', (destination, own, expected) => {
    expect(sourceAddressFor(destination, own)).toBe(expected);
  });
});
