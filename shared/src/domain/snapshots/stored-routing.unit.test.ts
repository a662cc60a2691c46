import { describe, expect, it } from 'vitest';
import { type GatewayRoute, GatewayRouting } from '../../messages/gateway-snapshot.js';
import { firstOfEachName } from './stored-routing.js';

const route = (name: string, host: string): GatewayRoute => ({
  name,
  match: { hosts: [host] },
  selector: {},
  policy: 'least-active',
});

describe('firstOfEachName', () => {
  it.each<[string, GatewayRoute[], string[], string[]]>([
    ['a valid routing unchanged', [route('a', 'x.com'), route('b', '*')], ['a', 'b'], []],
    ['a later duplicate dropped', [route('a', 'x.com'), route('a', '*')], ['a'], ['a']],
    [
      'every later duplicate, order kept',
      [route('a', 'x.com'), route('b', 'y.com'), route('a', 'z.com'), route('b', '*'), route('a', '*')],
      ['a', 'b'],
      ['a', 'b', 'a'],
    ],
    ['nothing from nothing', [], [], []],
  ])('%s', (_n, routes, kept, dropped) => {
    const out = firstOfEachName(routes);
    expect(out.routes.map((r) => r.name)).toEqual(kept);
    expect(out.droppedDuplicates).toEqual(dropped);
    // What it keeps is what every worker accepts.
    expect(GatewayRouting.safeParse(out.routes).success).toBe(true);
  });

  it('keeps the first route of a name, the one that already wins', () => {
    const out = firstOfEachName([route('a', 'x.com'), route('a', '*')]);
    expect(out.routes).toEqual([route('a', 'x.com')]);
  });
});

describe('GatewayRouting (the one routing schema)', () => {
  it('refuses two routes of the same name', () => {
    const r = GatewayRouting.safeParse([route('a', 'x.com'), route('a', '*')]);
    expect(r.success).toBe(false);
    expect(r.error?.issues[0]?.message).toBe('route names must be unique');
  });

  // Any spelling of an IPv6 literal is accepted and kept as written (lower case, brackets dropped): the
  // gateway compares literals in their RFC 5952 text on both sides (routing.ts normalizeHost). Not
  // rewritten here: this schema also reads snapshots, whose checksum covers the hosts as the controller
  // wrote them, so a worker rewriting them would refuse an older controller's snapshots.
  it('accepts every spelling of an IPv6 literal host, kept as written', () => {
    const hosts = ['[2001:0DB8:0:0::1]', '2001:db8:0:0:0:0:0:2', '[::1]', 'Shop.Example'];
    const r = GatewayRouting.parse(hosts.map((h, i) => route(`r${i}`, h)));
    expect(r.map((x) => x.match.hosts[0])).toEqual([
      '2001:0db8:0:0::1',
      '2001:db8:0:0:0:0:0:2',
      '::1',
      'shop.example',
    ]);
  });
});
