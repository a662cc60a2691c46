import { describe, expect, it } from 'vitest';
import { acceptOutcomeBatch, type ReportedOutcome, tallyOutcomes } from './outcomes.js';
import { passiveSignals } from './passive.js';
import { register } from './session.js';

const now = new Date('2026-01-01T00:00:00Z');
const session = {
  ...register(
    null,
    { workerId: 'w1', instanceId: 'i1', zone: 'z', protocolVersion: 1, principal: 'p' },
    now,
    's1',
    30_000,
  ).session,
  outcomeSequence: 7,
};
const o = (proxy: string, stage: string, ok: boolean, latencyMs = 100): ReportedOutcome => ({
  proxy,
  stage,
  ok,
  latencyMs,
  target: 'example.com:443',
});

describe('acceptOutcomeBatch (contract §5: de-duplicated by sequence)', () => {
  it.each<[number, string]>([
    [8, 'accept'],
    [100, 'accept'],
    [7, 'duplicate'],
    [3, 'duplicate'],
  ])('sequence %s after 7 → %s', (seq, kind) => {
    const d = acceptOutcomeBatch(session, seq);
    expect(d.kind).toBe(kind);
    if (d.kind === 'duplicate') expect(d.acceptedSequence).toBe(7);
  });
});

describe('tallyOutcomes', () => {
  it('tallies per proxy by stage; unknown stages are UNSPECIFIED (ignored), never guessed', () => {
    const t = tallyOutcomes(
      [
        o('a', 'DIAL', false),
        o('a', 'TUNNEL', true, 300),
        o('a', 'TUNNEL', true, 100),
        o('a', 'QUIC', false),
        o('b', 'UNSPECIFIED', true),
      ],
      () => true,
    );
    expect(t.recorded).toBe(3);
    expect(t.ignored).toBe(2);
    expect(t.tallies.get('a')).toEqual({
      ok: 2,
      dial: 1,
      proxyHandshake: 0,
      responseHeaders: 0,
      tunnel: 0,
      latencyMsSum: 400,
    });
    expect(t.tallies.has('b')).toBe(false);
  });
  it('ignores outcomes for proxies the worker has no business reporting', () => {
    const t = tallyOutcomes([o('mine', 'DIAL', false), o('theirs', 'DIAL', false)], (p) => p === 'mine');
    expect([...t.tallies.keys()]).toEqual(['mine']);
    expect(t.ignored).toBe(1);
  });
});

describe('passiveSignals (outcomes feed the reducer as passive signals)', () => {
  const batch = (...xs: ReportedOutcome[]) => ({
    workerId: 'gw',
    tallies: tallyOutcomes(xs, () => true).tallies,
  });
  const many = <T = ReportedOutcome>(n: number, f: () => T): T[] => Array.from({ length: n }, f);
  it.each<[string, ReportedOutcome[], boolean | null]>([
    ['too few samples: no signal', many(4, () => o('p', 'DIAL', false)), null],
    [
      'dial failures are the proxy’s fault',
      [...many(5, () => o('p', 'DIAL', false)), o('p', 'TUNNEL', true)],
      false,
    ],
    ['handshake failures are the proxy’s fault', many(6, () => o('p', 'PROXY_HANDSHAKE', false)), false],
    [
      'mostly fine',
      [...many(8, () => o('p', 'TUNNEL', true)), o('p', 'DIAL', false), o('p', 'DIAL', false)],
      true,
    ],
    [
      'target-side failures beside successes are not the proxy’s',
      [...many(10, () => o('p', 'RESPONSE_HEADERS', false)), o('p', 'TUNNEL', true)],
      true,
    ],
    ['target-side failures with no success at all count', many(6, () => o('p', 'TUNNEL', false)), false],
    [
      'long tunnels beside refusals of a dead site: the proxy works',
      [...many(3, () => o('p', 'TUNNEL', true)), ...many(5, () => o('p', 'RESPONSE_HEADERS', false))],
      true,
    ],
    // A tunnel that broke reports its success at establishment, then its failure: one request, a failure.
    [
      'every tunnel reset after it was established: no success left, the proxy fails',
      many(5, () => [o('p', 'TUNNEL', true), o('p', 'TUNNEL', false)]).flat(),
      false,
    ],
    [
      'broken tunnels do not dilute handshake failures',
      [
        ...many(3, () => o('p', 'PROXY_HANDSHAKE', false)),
        ...many(2, () => [o('p', 'TUNNEL', true), o('p', 'TUNNEL', false)]).flat(),
      ],
      false,
    ],
  ])('%s', (_n, outcomes, ok) => {
    const s = passiveSignals([batch(...outcomes)]).signals;
    expect(s.length ? s[0]!.ok : null).toBe(ok);
  });
  it('sums batches and reports the mean latency of successes', () => {
    const s = passiveSignals([
      batch(...many(3, () => o('p', 'TUNNEL', true, 100))),
      batch(...many(3, () => o('p', 'TUNNEL', true, 300))),
    ]).signals;
    expect(s).toEqual([{ proxy: 'p', ok: true, samples: 6, failureRatio: 0, latencyMs: 200 }]);
  });
});
