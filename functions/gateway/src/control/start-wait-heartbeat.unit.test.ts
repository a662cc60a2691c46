// The session is kept alive through the start wait (gateway.ts starts the reporter before the source):
// a worker registered and handed its empty first snapshot, with no second version coming (an empty share,
// or the pass its first ACK asked for lost — best effort), reports on that ACK's bound every interval, so
// the controller never lapses the session during a wait longer than its TTL.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { loadGatewayConfig } from '../config.js';
import { startGateway } from '../gateway.js';
import { jsonLogger } from '../logger.js';
import { FakeClient, FakeFeed, feedMessage, refusal, snapshot, T0, testSession, WORKER } from './fakes.js';

const START_WAIT_MS = 120_000;
const SESSION_TTL_MS = 30_000; // fakes.ts registration()

/**
 * A control client whose sessions lapse as the API's do: nothing accepted (an ACK, a runtime report) for
 * the session TTL, and every call on it is answered session_expired.
 */
function lapsingClient() {
  const client = new FakeClient();
  let heardAt = T0;
  let lapsed = false;
  const live = () => {
    if (Date.now() - heardAt > SESSION_TTL_MS) lapsed = true;
    return !lapsed;
  };
  const { register, ack, runtime, latestSnapshot } = client.defaults;
  const call = (d: typeof ack) => (body: unknown) => {
    if (!live()) return refusal(410, 'session_expired');
    heardAt = Date.now();
    return typeof d === 'function' ? d(body) : d;
  };
  client.defaults.register = (body) => {
    heardAt = Date.now();
    lapsed = false;
    return typeof register === 'function' ? register(body) : register;
  };
  client.defaults.ack = call(ack);
  client.defaults.runtime = call(runtime);
  client.defaults.latestSnapshot = (body) =>
    live()
      ? typeof latestSnapshot === 'function'
        ? latestSnapshot(body)
        : latestSnapshot
      : refusal(410, 'session_expired');
  return client;
}

/** startGateway in controller mode over the lapsing client, told to stop (during its wait) by `stop()`. */
function startInWait() {
  const client = lapsingClient();
  const feed = new FakeFeed();
  const log = jsonLogger('error', () => {});
  const session = testSession({ client, feed, log, settings: { startWaitMs: START_WAIT_MS } });
  const cfg = loadGatewayConfig([], {
    GATEWAY_CLIENT_USERS: 'u:p',
    HOST: '127.0.0.1',
    PORT: '0',
    GATEWAY_PROXY_PORT: '0',
  });
  const stopping = new AbortController();
  const started = startGateway(cfg, {
    log,
    version: 't',
    workerId: WORKER,
    source: session.source,
    reporter: session.reporter,
    stopping: stopping.signal,
  });
  const stop = async () => {
    stopping.abort();
    let result: unknown;
    void started.then((r) => {
      result = r;
    });
    for (let i = 0; i < 50 && result === undefined; i++) await vi.advanceTimersByTimeAsync(100);
    return result;
  };
  return { client, feed, session, stop };
}

beforeEach(() => {
  // setImmediate left real: the worker startGateway builds applies a snapshot in slices between turns of
  // the event loop (slices.ts), which a faked setImmediate would hold until the clock is advanced.
  vi.useFakeTimers({
    now: T0,
    toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'],
  });
});
afterEach(() => {
  vi.useRealTimers();
});

describe('the start wait', () => {
  it('an empty first snapshot and nothing after it for longer than the session TTL: reports keep the session', async () => {
    const { client, feed, session, stop } = startInWait();
    await vi.advanceTimersByTimeAsync(0);
    await feed.deliver(feedMessage(snapshot(1, []))); // a new session's first snapshot holds no proxy
    await vi.advanceTimersByTimeAsync(0);
    expect(client.of('ack')).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(START_WAIT_MS - 1_000); // still in the wait
    const reports = client.of('runtime');
    // One at the ACK, then one every report interval (5 s) of the wait.
    expect(reports.length).toBeGreaterThanOrEqual(20);
    const at = reports.map((c) => c.at - T0);
    expect(at[0]).toBeLessThan(SESSION_TTL_MS);
    expect(Math.max(...at.slice(1).map((t, i) => t - at[i]!))).toBeLessThanOrEqual(5_000);
    expect(reports.map((c) => c.body)).toContainEqual(
      expect.objectContaining({ sessionId: 'session-1', snapshotVersion: 1, counts: [], draining: false }),
    );
    // The session never lapsed: one registration, nothing refused.
    expect(client.of('register')).toHaveLength(1);
    expect(session.session?.sessionId).toBe('session-1');
    expect(await stop()).toBeNull();
    expect(client.of('register')).toHaveLength(1);
  });

  it('a session lost before its first snapshot is found lapsed at its TTL, not at the end of the wait', async () => {
    const { client, session, stop } = startInWait();
    await vi.advanceTimersByTimeAsync(0);
    // No snapshot comes (the pass its registration asked for failed): nothing is ACKed, the session lapses
    // at 30 s; the TTL probe's fetch is answered session_expired and the worker registers again.
    await vi.advanceTimersByTimeAsync(2 * SESSION_TTL_MS);
    expect(client.of('latestSnapshot').some((c) => c.at - T0 > SESSION_TTL_MS)).toBe(true);
    expect(client.of('register')).toHaveLength(2);
    expect(session.session?.sessionId).toBe('session-2');
    expect(await stop()).toBeNull();
  });
});
