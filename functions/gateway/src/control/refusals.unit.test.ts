import { describe, expect, it } from 'vitest';
import { Backoff } from '../../../../shared/src/domain/gateway/backoff.js';
import type { ControlReaction } from '../../../../shared/src/domain/gateway/control-reaction.js';
import { jsonLogger } from '../logger.js';
import { type Refusal, RefusalLog, retryDelay } from './refusals.js';

const SETTINGS = { backoff: { initialMs: 500, maxMs: 8_000 }, slowRetryMs: 60_000 };

describe('retryDelay', () => {
  it.each<[string, ControlReaction, number | undefined, number, number]>([
    ['Retry-After is honoured', 'rate_limited', 7_000, 0.5, 7_000],
    ['Retry-After below the first step waits the first step', 'rate_limited', 0, 0.5, 500],
    ['Retry-After above the slow retry waits the slow retry', 'rate_limited', 86_400_000, 0.5, 60_000],
    ['429 without Retry-After backs off', 'rate_limited', undefined, 1, 500],
    ['403 waits half the slow retry at least', 'retry_slowly', undefined, 0, 30_000],
    ['403 waits the slow retry at most', 'retry_slowly', undefined, 1, 60_000],
    ['anything else backs off (equal jitter)', 'retry', undefined, 0, 250],
  ])('%s', (_name, reaction, retryAfterMs, r, expected) => {
    const random = () => r;
    const backoff = new Backoff(SETTINGS.backoff, random);
    expect(retryDelay(reaction, { retryAfterMs }, SETTINGS, random, backoff)).toBe(expected);
  });

  it('steps the backoff only when it is what decides the wait', () => {
    const backoff = new Backoff(SETTINGS.backoff, () => 1);
    retryDelay('rate_limited', { retryAfterMs: 1_000 }, SETTINGS, () => 1, backoff);
    retryDelay('retry_slowly', {}, SETTINGS, () => 1, backoff);
    expect(backoff.attempt).toBe(0);
    expect(retryDelay('retry', {}, SETTINGS, () => 1, backoff)).toBe(500);
    expect(retryDelay('retry', {}, SETTINGS, () => 1, backoff)).toBe(1_000);
  });
});

describe('RefusalLog', () => {
  function harness() {
    let now = 0;
    const lines: Array<Record<string, unknown>> = [];
    const log = new RefusalLog(
      jsonLogger('debug', (l) => lines.push(JSON.parse(l) as Record<string, unknown>)),
      'gw-1',
      () => now,
      30_000,
    );
    return { log, lines, at: (ms: number) => (now = ms) };
  }
  const refusal = (status: number, code?: string): Refusal => ({ ok: false, status, code, message: 'no' });

  it.each<[ControlReaction, string]>([
    ['retry_slowly', 'ERROR'],
    ['drop', 'ERROR'],
    ['fatal', 'ERROR'],
    ['await_snapshot', 'INFO'],
    ['no_snapshot', 'INFO'],
    ['rate_limited', 'INFO'],
    ['ack_first', 'INFO'],
    ['retry', 'WARNING'],
    ['reregister', 'WARNING'],
  ])('%s is logged at %s', (reaction, severity) => {
    const h = harness();
    h.log.record('ack', refusal(409, 'x'), reaction, null);
    expect(h.lines).toHaveLength(1);
    expect(h.lines[0]).toMatchObject({ severity, message: 'control plane refused ack', workerId: 'gw-1' });
  });

  it('says a repeated refusal once per quiet period, with how many it left out', () => {
    const h = harness();
    const r = refusal(503, 'unavailable');
    h.log.record('register', r, 'retry', 500);
    h.at(10_000);
    h.log.record('register', r, 'retry', 1_000);
    h.log.record('register', r, 'retry', 2_000);
    // Another call, status or code is another kind of refusal: said at once.
    h.log.record('ack', r, 'retry', 500);
    h.log.record('register', refusal(503), 'retry', 500);
    h.at(30_000);
    h.log.record('register', r, 'retry', 4_000);
    expect(h.lines.map((l) => [l.message, l.code ?? null, l.retryInMs, l.suppressedSinceLast])).toEqual([
      ['control plane refused register', 'unavailable', 500, undefined],
      ['control plane refused ack', 'unavailable', 500, undefined],
      ['control plane refused register', null, 500, undefined],
      ['control plane refused register', 'unavailable', 4_000, 2],
    ]);
  });
});
