import { describe, expect, it } from 'vitest';
import { emptyTally, type OutcomeTally } from './outcomes.js';
import { passiveSignals, type WorkerTallies } from './passive.js';

const fail: OutcomeTally = { ...emptyTally(), dial: 6 };
const pass: OutcomeTally = { ...emptyTally(), ok: 6, latencyMsSum: 600 };
/** `name` fails, `+name` passes. */
const w = (workerId: string, ...proxies: string[]): WorkerTallies => ({
  workerId,
  tallies: new Map(proxies.map((p) => (p.startsWith('+') ? [p.slice(1), pass] : [p, fail]))),
});
const verdicts = (batches: WorkerTallies[]) =>
  Object.fromEntries(passiveSignals(batches).signals.map((s) => [s.proxy, s.ok]));

describe('passiveSignals: a worker failing (nearly) every proxy is suspect, not its proxies', () => {
  it.each<[string, WorkerTallies[], Record<string, boolean>, string[]]>([
    ['all three of its proxies fail: dropped', [w('gw-1', 'a', 'b', 'c')], {}, ['gw-1']],
    ['4 of 5 fail (80 %): dropped', [w('gw-1', 'a', 'b', 'c', 'd', '+e')], {}, ['gw-1']],
    [
      '3 of 5 fail: the proxies are blamed as before',
      [w('gw-1', 'a', 'b', 'c', '+d', '+e')],
      { a: false, b: false, c: false, d: true, e: true },
      [],
    ],
    ['two proxies only: too little to judge the worker', [w('gw-1', 'a', 'b')], { a: false, b: false }, []],
    [
      'the healthy worker’s evidence on the same proxies still counts',
      [w('gw-1', 'a', 'b', 'c'), w('gw-2', '+a', '+b', 'c', '+d')],
      { a: true, b: true, c: false, d: true },
      ['gw-1'],
    ],
    [
      'the worker is judged on its whole window, across batches',
      [w('gw-1', 'a'), w('gw-1', 'b'), w('gw-1', 'c'), w('gw-2', 'a', '+x', '+y')],
      { a: false, x: true, y: true },
      ['gw-1'],
    ],
  ])('%s', (_n, batches, expected, suspect) => {
    expect(verdicts(batches)).toEqual(expected);
    expect(passiveSignals(batches).suspects.map((s) => s.workerId)).toEqual(suspect);
  });

  it('reports the suspect worker’s counts', () => {
    expect(passiveSignals([w('gw-9', 'a', 'b', 'c', 'd', '+e')]).suspects).toEqual([
      { workerId: 'gw-9', proxies: 5, failing: 4 },
    ]);
  });

  it('the thresholds are the rule’s', () => {
    const rule = { minSamples: 5, maxFailureRatio: 0.5, suspectMinProxies: 4, suspectFailureShare: 1 };
    expect(passiveSignals([w('gw-1', 'a', 'b', 'c')], rule).suspects).toEqual([]);
    expect(passiveSignals([w('gw-1', 'a', 'b', 'c', 'd')], rule).suspects).toHaveLength(1);
  });
});
