import { describe, expect, it } from 'vitest';
import type { RoutingRule } from '../../shared/src/messages/gateway-snapshot.js';
import { runCli } from '../run.js';
import { cliDeps, recordingIo } from '../testing.js';
import { APPLY_ATTEMPTS, routingChanges } from './routing.js';

type Answer = [number, unknown];

/** A fetch that answers `answers` in order and records "METHOD path" and each If-Match sent. */
function scripted(answers: Answer[]) {
  const calls: string[] = [];
  const ifMatch: string[] = [];
  const fetch = (async (url: string, init: RequestInit) => {
    calls.push(`${init.method} ${new URL(url).pathname}`);
    const sent = (init.headers as Record<string, string> | undefined)?.['if-match'];
    if (sent !== undefined) ifMatch.push(sent);
    const [status, json] = answers.shift() ?? [500, { error: 'internal' }];
    return new Response(JSON.stringify(json), { status });
  }) as unknown as typeof globalThis.fetch;
  return { fetch, calls, ifMatch };
}

async function run(argv: string[], answers: Answer[], file = '') {
  const io = { ...recordingIo(), readFile: async () => file };
  const f = scripted(answers);
  const exit = await runCli([...argv, '--api', 'http://127.0.0.1:9'], cliDeps(io, f.fetch));
  return { exit, out: io.outLines, err: io.errLines, calls: f.calls, ifMatch: f.ifMatch };
}

const route = (name: string, policy: RoutingRule['policy'] = 'least-active'): RoutingRule => ({
  name,
  match: { hosts: ['*'] },
  selector: {},
  policy,
});
const stored = (revision: number, routes = [route('a')]) => ({
  routes,
  updatedAt: '2026-02-01T11:00:00Z',
  updatedBy: 'admin',
  default: false,
  revision,
});
const conflict: Answer = [412, { error: 'precondition_failed', revision: 9 }];
const handWritten = 'routes:\n  - {name: b, match: {hosts: ["*"]}, policy: round-robin}\n';

describe('routingChanges', () => {
  it('names the routes added, removed and changed, and an order change', () => {
    const [a, b, c] = [route('a'), route('b'), route('c')];
    expect(routingChanges([a, b], [a, b])).toBe('');
    expect(routingChanges([a], [a, c])).toBe('added c');
    expect(routingChanges([a, b], [b])).toBe('removed a');
    expect(routingChanges([a, b], [a, route('b', 'round-robin')])).toBe('changed b');
    // Routes match in order: the same routes in another order are a different routing.
    expect(routingChanges([a, b], [b, a])).toBe('reordered');
    expect(routingChanges([a, b, c], [c, route('a', 'sticky'), c].slice(0, 2))).toBe(
      'removed b; changed a; reordered',
    );
  });
});

describe('routing apply', () => {
  it('writes nothing when the file holds the stored routes (defaults filled in on both sides)', async () => {
    const r = await run(
      ['routing', 'apply', '-f', 'r.yaml'],
      [[200, stored(4)]],
      'routes:\n  - {name: a, match: {hosts: ["*"]}, policy: least-active}\n',
    );
    expect(r).toMatchObject({ exit: 0, out: ['routing unchanged (revision 4, 1 route)'] });
    expect(r.calls).toEqual(['GET /v1/gateway/routing']);
  });

  it('writes nothing for a file whose host carries a trailing dot: the API stores it without one', async () => {
    const dotted = stored(4, [{ ...route('a'), match: { hosts: ['shop.example'] } }]);
    const r = await run(
      ['routing', 'apply', '-f', 'r.yaml'],
      [[200, dotted]],
      'routes:\n  - {name: a, match: {hosts: ["shop.example."]}, policy: least-active}\n',
    );
    expect(r).toMatchObject({ exit: 0, out: ['routing unchanged (revision 4, 1 route)'] });
    expect(r.calls).toEqual(['GET /v1/gateway/routing']);
  });

  it('PUTs over stored routes this CLI cannot read (a newer API) instead of failing', async () => {
    const newer = stored(4, [{ ...route('b', 'round-robin'), fallback: 'direct' } as unknown as RoutingRule]);
    const put = [200, { routes: [route('b', 'round-robin')], revision: 5 }] as Answer;
    const r = await run(['routing', 'apply', '-f', 'r.yaml'], [[200, newer], put], handWritten);
    expect(r.exit, r.err.join()).toBe(0);
    expect(r.ifMatch).toEqual(['"4"']);
    expect(r.out[0]).toMatch(/^routing configured: revision 4 → 5, 1 route \(changed b\)/);
  });

  it('PUTs with If-Match of the revision it read, and reads again on 412 (someone wrote in between)', async () => {
    const put = [200, { routes: [route('b', 'round-robin')], revision: 10 }] as Answer;
    const r = await run(
      ['routing', 'apply', '-f', 'r.yaml'],
      [[200, stored(4)], conflict, [200, stored(9)], put],
      handWritten,
    );
    expect(r.exit).toBe(0);
    expect(r.ifMatch).toEqual(['"4"', '"9"']);
    expect(r.out).toEqual([
      'routing configured: revision 9 → 10, 1 route (added b; removed a); the gateways get it with the next snapshot',
    ]);
  });

  it(`gives up after ${APPLY_ATTEMPTS} conflicts with the API's code`, async () => {
    const answers: Answer[] = [];
    for (let i = 0; i < APPLY_ATTEMPTS; i++) answers.push([200, stored(4 + i)], conflict);
    const r = await run(['routing', 'apply', '-f', 'r.yaml'], answers, handWritten);
    expect(r.exit).toBe(1);
    expect(r.err[0]).toMatch(/^error: precondition_failed — someone else kept changing the routing/);
    expect(r.calls.filter((c) => c.startsWith('PUT'))).toHaveLength(APPLY_ATTEMPTS);
  });

  it('a saved file is pinned to its revision: refused before any write when the routing moved on, and not retried on 412', async () => {
    const saved = `revision: 4\n${handWritten}`;
    const moved = await run(['routing', 'apply', '-f', 'r.yaml'], [[200, stored(5)]], saved);
    expect(moved.exit).toBe(1);
    expect(moved.err[0]).toMatch(
      /r\.yaml was saved at routing revision 4, and the routing is now at revision 5/,
    );
    expect(moved.calls).toEqual(['GET /v1/gateway/routing']);

    const raced = await run(
      ['routing', 'apply', '-f', 'r.yaml'],
      [[200, stored(4)], conflict, [200, stored(9)]],
      saved,
    );
    expect(raced.exit).toBe(1);
    expect(raced.ifMatch).toEqual(['"4"']);
    expect(raced.err[0]).toMatch(/saved at routing revision 4, and the routing is now at revision 9/);
  });

  it('a saved file applied again once its routes are stored converges, whatever the revision', async () => {
    // Its first apply landed but the answer was lost (or answered 503 and then 412 on the retry).
    const saved = `revision: 4\n${handWritten}`;
    const again = await run(
      ['routing', 'apply', '-f', 'r.yaml'],
      [[200, stored(5, [route('b', 'round-robin')])]],
      saved,
    );
    expect(again).toMatchObject({ exit: 0, out: ['routing unchanged (revision 5, 1 route)'] });
    expect(again.calls).toEqual(['GET /v1/gateway/routing']);

    const retried = await run(
      ['routing', 'apply', '-f', 'r.yaml'],
      [[200, stored(4)], conflict, [200, stored(5, [route('b', 'round-robin')])]],
      saved,
    );
    expect(retried).toMatchObject({ exit: 0, out: ['routing unchanged (revision 5, 1 route)'] });
  });

  it('refuses a file that is not one routing, before sending anything (exit 2)', async () => {
    for (const file of [
      '',
      'routes: []\n',
      '- {name: a}\n',
      `${handWritten}---\n${handWritten}`,
      'routes: x\nupdatedAt: 3\n',
    ]) {
      const r = await run(['routing', 'apply', '-f', 'r.yaml'], [], file);
      expect(r.exit, file).toBe(2);
      expect(r.calls).toEqual([]);
    }
  });
});
