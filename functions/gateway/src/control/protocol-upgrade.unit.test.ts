// The offer of a higher protocol while a session runs below our highest (protocol-upgrade.ts): each
// attempt steps down from the highest to just above the current version, as registration does, and takes
// the highest the API speaks.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { jsonLogger } from '../logger.js';
import {
  FakeClient,
  FakeFeed,
  feedMessage,
  refusal,
  registration,
  snapshot,
  T0,
  testSession,
  testWorker,
} from './fakes.js';
import { WORKER_PROTOCOL_VERSION } from './registration.js';

const RETRY_MS = 600_000;

/** A session against an API that speaks protocols 1 to `api.max` (changed by the test). */
function harness(api: { max: number }) {
  const client = new FakeClient();
  const feed = new FakeFeed();
  const log = jsonLogger('error', () => {});
  const worker = testWorker(log);
  client.defaults.register = (body) => {
    const v = (body as { supportedProtocolVersion: number }).supportedProtocolVersion;
    if (v > api.max) return refusal(400, 'unsupported_protocol_version');
    return { ok: true, body: registration(`session-v${v}`, { protocolVersion: v }) };
  };
  const session = testSession({
    client,
    feed,
    log,
    settings: { startWaitMs: 60_000, protocolUpgradeRetryMs: RETRY_MS },
  });
  const offered = () =>
    client
      .of('register')
      .map((c) => (c.body as { supportedProtocolVersion: number }).supportedProtocolVersion);
  /** Started as startGateway starts it, and given its first snapshot. */
  const start = async () => {
    void session.source.start(worker).catch(() => {});
    session.reporter.start(worker);
    await vi.advanceTimersByTimeAsync(0);
    await feed.deliver(feedMessage(snapshot(1, ['p-a'])));
  };
  return { client, feed, worker, session, offered, start };
}

beforeEach(() => {
  vi.useFakeTimers({ now: T0 });
});
afterEach(() => {
  vi.useRealTimers();
});

describe('protocol upgrade', () => {
  it('stepped down to 3, then the API speaks 4 (not 5): the next attempt offers 5 then 4, and takes 4', async () => {
    expect(WORKER_PROTOCOL_VERSION).toBe(5);
    const api = { max: 3 };
    const h = harness(api);
    await h.start();
    expect(h.offered()).toEqual([5, 4, 3]);
    expect(h.session.session?.registration.protocolVersion).toBe(3);
    // The API is still at 3 at the first attempt: 5 and 4 refused, the session at 3 carries on.
    await vi.advanceTimersByTimeAsync(RETRY_MS);
    expect(h.offered()).toEqual([5, 4, 3, 5, 4]);
    expect(h.session.session?.sessionId).toBe('session-v3');
    api.max = 4;
    await vi.advanceTimersByTimeAsync(RETRY_MS);
    expect(h.offered()).toEqual([5, 4, 3, 5, 4, 5, 4]);
    expect(h.session.session?.sessionId).toBe('session-v4');
    expect(h.session.session?.registration.protocolVersion).toBe(4);
    // Now at 4: each attempt offers 5 alone (never the current version again, nor below it).
    await vi.advanceTimersByTimeAsync(RETRY_MS);
    expect(h.offered()).toEqual([5, 4, 3, 5, 4, 5, 4, 5]);
    api.max = 5;
    await vi.advanceTimersByTimeAsync(RETRY_MS);
    expect(h.session.session?.registration.protocolVersion).toBe(5);
    // At the highest: nothing more is offered.
    await vi.advanceTimersByTimeAsync(6 * RETRY_MS);
    expect(h.offered()).toEqual([5, 4, 3, 5, 4, 5, 4, 5, 5]);
    await h.session.reporter.stop();
  });

  it('an attempt whose call fails stops stepping down and tries the whole offer again later', async () => {
    const api = { max: 3 };
    const h = harness(api);
    await h.start();
    api.max = 4;
    h.client.scripts.register.push(refusal(503));
    await vi.advanceTimersByTimeAsync(RETRY_MS);
    expect(h.offered()).toEqual([5, 4, 3, 5]);
    expect(h.session.session?.sessionId).toBe('session-v3');
    await vi.advanceTimersByTimeAsync(RETRY_MS);
    expect(h.offered()).toEqual([5, 4, 3, 5, 5, 4]);
    expect(h.session.session?.sessionId).toBe('session-v4');
    await h.session.reporter.stop();
  });
});
