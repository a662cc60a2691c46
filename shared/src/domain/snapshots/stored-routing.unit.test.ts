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
});
