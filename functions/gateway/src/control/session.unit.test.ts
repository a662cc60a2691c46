// The session's state machine (register → pull → apply/ACK → full snapshot on a bad delta → backoff on
// failures, bounded with jitter), driven through a scripted control client, a fake feed and the real
// GatewayWorker, on vitest's fake clock.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { buildDelta } from '../../../../shared/src/domain/gateway/delta.js';
import { sha256Hex } from '../../../../shared/src/messages/gateway-snapshot.js';
import type { GatewayClocks } from '../../../../test/support/gateway-clocks.js';
import { jsonLogger } from '../logger.js';
import {
  FakeClient,
  FakeFeed,
  feedMessage,
  refusal,
  registration,
  type Script,
  SUBSCRIPTION,
  snapshot,
  T0,
  testSession,
  testWorker,
  WORKER,
} from './fakes.js';
import type { SessionSettings } from './session.js';

const BACKOFF = { initialMs: 500, maxMs: 8_000 };
/** Between two slices of a snapshot: a microtask, which the fake clock's flush runs (a real setImmediate it would not). */
const _microtask = () => Promise.resolve();

/** The harness's next `method` call stays unanswered until the returned function answers it. */
function held(
  h: ReturnType<typeof harness>,
  method: Parameters<ReturnType<typeof harness>['script']>[0] = 'register',
): (answer: unknown) => void {
  let answer: (a: unknown) => void = () => {};
  h.script(
    method,
    (() =>
      new Promise((r) => {
        answer = r;
      })) as unknown as Script,
  );
  return (a) => answer(a);
}

function harness(
  o: {
    random?: number;
    settings?: Partial<SessionSettings>;
    now?: () => number;
    monotonicNow?: () => number;
    /** The worker's two clocks, when a test moves them apart (default: the fake clock's Date.now for both). */
    workerClocks?: GatewayClocks;
  } = {},
) {
  const client = new FakeClient();
  const feed = new FakeFeed();
  const lines: Array<Record<string, unknown>> = [];
  const log = jsonLogger('debug', (l) => lines.push(JSON.parse(l) as Record<string, unknown>));
  const worker = testWorker(log, o.workerClocks);
  const fatal: Error[] = [];
  const session = testSession({
    client,
    feed,
    log,
    random: () => o.random ?? 0,
    ...(o.now ? { now: o.now } : {}),
    ...(o.monotonicNow ? { monotonicNow: o.monotonicNow } : {}),
    settings: { backoff: BACKOFF, slowRetryMs: 20_000, startWaitMs: 60_000, ...o.settings },
    onFatal: (e) => fatal.push(e),
  });
  let started: Promise<void> | null = null;
  return {
    client,
    feed,
    worker,
    session,
    lines,
    fatal,
    /** start() as startGateway calls it (not awaited: it waits for the first snapshot), then the reporter. */
    async start() {
      started = session.source.start(worker);
      started.catch(() => {});
      session.reporter.start(worker);
      await vi.advanceTimersByTimeAsync(0);
    },
    get started() {
      return started!;
    },
    script(method: Parameters<FakeClient['of']>[0], ...answers: Script[]) {
      client.scripts[method].push(...answers);
    },
  };
}

/** The runtime reports sent so far that say draining with every count zero: the last word. */
const idleDrainingReports = (h: ReturnType<typeof harness>) =>
  h.client
    .of('runtime')
    .map((c) => c.body as { draining: boolean; counts: unknown[] })
    .filter((b) => b.draining && b.counts.length === 0);
const gaps = (times: number[]) => times.slice(1).map((t, i) => t - times[i]!);
/** A tunnel's outcome on p-a, `i` ms long. */
const outcome = (i: number) => ({
  proxy: 'p-a',
  route: 'all',
  stage: 'TUNNEL' as const,
  ok: true,
  latencyMs: i,
  target: 'example.com:443',
  at: T0,
});
const flush = () => vi.advanceTimersByTimeAsync(0);

beforeEach(() => {
  vi.useFakeTimers({ now: T0 });
});
afterEach(() => {
  vi.useRealTimers();
});

describe('registration', () => {
  it('registers with its identity, opens the pull on the subscription it was given, and waits', async () => {
    const h = harness();
    await h.start();
    expect(h.client.of('register').map((c) => c.body)).toEqual([
      { workerId: WORKER, instanceId: 'instance-1', zone: 'local', supportedProtocolVersion: 5 },
    ]);
    expect(h.feed.opened).toEqual([SUBSCRIPTION]);
    expect(h.session.session?.sessionId).toBe('session-1');
  });

  // Each row: the refusals before a success, and the waits between attempts (random = 0: half the step).
  it.each([
    ['503 unavailable', [refusal(503, 'unavailable')], [250]],
    ['no answer at all (network)', [refusal(0), refusal(0), refusal(0)], [250, 500, 1_000]],
    ['500 without a code', [refusal(500), refusal(502)], [250, 500]],
    ['401 (fresh token, backoff)', [refusal(401, 'unauthenticated')], [250]],
    ['403 (configuration: slowly)', [refusal(403, 'forbidden')], [10_000]],
    ['429 with Retry-After 7 s', [refusal(429, 'rate_limited', 7_000)], [7_000]],
    ['429 with Retry-After 0', [refusal(429, 'rate_limited', 0)], [500]],
  ])('retries after %s', async (_label, refusals, waits) => {
    const h = harness();
    h.script('register', ...refusals);
    await h.start();
    await vi.advanceTimersByTimeAsync(30_000);
    const times = h.client.of('register').map((c) => c.at);
    expect(times).toHaveLength(refusals.length + 1);
    expect(gaps(times)).toEqual(waits);
    expect(h.session.session?.sessionId).toBe('session-1');
  });

  it('a Retry-After of days (or past what a timer holds) is waited at most the slow retry, never 1 ms', async () => {
    // setTimeout takes a 32-bit delay: 2^31 ms or more fires after 1 ms — a tight registration loop.
    const h = harness();
    h.script('register', refusal(429, 'rate_limited', 2 ** 31), refusal(429, 'rate_limited', 86_400_000));
    await h.start();
    await vi.advanceTimersByTimeAsync(1_000);
    expect(h.client.of('register')).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(120_000);
    const times = h.client.of('register').map((c) => c.at);
    expect(gaps(times)).toEqual([20_000, 20_000]);
    expect(h.session.session?.sessionId).toBe('session-1');
  });

  it('backs off exponentially, capped, and never in a tight loop (jitter within [half, full] step)', async () => {
    for (const random of [0, 0.999]) {
      const h = harness({ random });
      h.script('register', ...Array.from({ length: 9 }, () => refusal(503, 'unavailable')));
      await h.start();
      await vi.advanceTimersByTimeAsync(120_000);
      const waits = gaps(h.client.of('register').map((c) => c.at));
      expect(waits).toHaveLength(9);
      waits.forEach((w, i) => {
        const step = Math.min(BACKOFF.maxMs, BACKOFF.initialMs * 2 ** i);
        expect(w).toBeGreaterThanOrEqual(step / 2);
        expect(w).toBeLessThanOrEqual(step);
      });
      expect(Math.max(...waits)).toBeLessThanOrEqual(BACKOFF.maxMs);
      await h.session.reporter.stop();
    }
  });

  it('a control plane that stays down: one log line per kind of refusal per 30 s, with a count', async () => {
    const h = harness({ random: 0.999 });
    h.script('register', ...Array.from({ length: 30 }, () => refusal(0)));
    await h.start();
    await vi.advanceTimersByTimeAsync(120_000);
    const attempts = h.client.of('register').length;
    const lines = h.lines.filter((l) => l.message === 'control plane refused register');
    expect(attempts).toBeGreaterThan(15);
    expect(lines.length).toBeGreaterThanOrEqual(4);
    expect(lines.length).toBeLessThanOrEqual(5);
    expect(lines[1]).toMatchObject({ severity: 'WARNING', status: 0, reaction: 'retry' });
    expect(lines[1]!.suppressedSinceLast).toBeGreaterThan(0);
    await h.session.reporter.stop();
  });

  // Its highest is 5 (suspect entries); a control plane of protocol 4, 3, 2 or 1 is still one it works with.
  it.each([
    [4, [5, 4]],
    [3, [5, 4, 3]],
    [2, [5, 4, 3, 2]],
    [1, [5, 4, 3, 2, 1]],
  ])(
    'steps down to a protocol it also speaks when the controller speaks only up to %s',
    async (max, offers) => {
      const h = harness();
      for (let v = 5; v > max; v--) h.script('register', refusal(400, 'unsupported_protocol_version'));
      await h.start();
      expect(
        h.client
          .of('register')
          .map((c) => (c.body as { supportedProtocolVersion: number }).supportedProtocolVersion),
      ).toEqual(offers);
      expect(h.session.session?.sessionId).toBe('session-1');
      expect(h.session.session?.registration.protocolVersion).toBe(max);
      expect(h.fatal).toEqual([]);
    },
  );

  it('stepped down, offers its highest protocol again until the controller speaks it, then takes that session', async () => {
    const h = harness({ settings: { protocolUpgradeRetryMs: 600_000 } });
    const offered = () =>
      h.client
        .of('register')
        .map((c) => (c.body as { supportedProtocolVersion: number }).supportedProtocolVersion);
    h.script('register', refusal(400, 'unsupported_protocol_version'));
    await h.start();
    const s1 = snapshot(1, ['p-a']);
    await h.feed.deliver(feedMessage(s1));
    expect(h.session.session?.registration.protocolVersion).toBe(4);
    // The API is still the old one at the first retry: the running session carries on untouched.
    h.script('register', refusal(400, 'unsupported_protocol_version'));
    await vi.advanceTimersByTimeAsync(600_000);
    expect(offered()).toEqual([5, 4, 5]);
    expect(h.session.session?.sessionId).toBe('session-1');
    // Upgraded API: a new session at 5, and the applied snapshot ACKed again under it.
    await vi.advanceTimersByTimeAsync(600_000);
    expect(offered()).toEqual([5, 4, 5, 5]);
    expect(h.session.session?.sessionId).toBe('session-2');
    expect(h.session.session?.registration.protocolVersion).toBe(5);
    expect(h.client.of('ack').map((c) => c.body)).toEqual([
      { sessionId: 'session-1', version: 1, epoch: 1, checksum: s1.checksum },
      { sessionId: 'session-2', version: 1, epoch: 1, checksum: s1.checksum },
    ]);
    expect(
      h.lines.some((l) => l.message === 'control plane speaks a higher protocol now: session replaced'),
    ).toBe(true);
    // At the highest version: nothing more to offer.
    await vi.advanceTimersByTimeAsync(3_600_000);
    expect(offered()).toEqual([5, 4, 5, 5]);
    await h.session.reporter.stop();
  });

  it('an upgrade answered after shutdown began is still taken: draining reports go on the session the API knows', async () => {
    const h = harness({ settings: { protocolUpgradeRetryMs: 600_000 } });
    h.script('register', refusal(400, 'unsupported_protocol_version'));
    await h.start();
    await h.feed.deliver(feedMessage(snapshot(1, ['p-a'])));
    await flush();
    const answer = held(h);
    await vi.advanceTimersByTimeAsync(600_000);
    expect(h.client.of('register')).toHaveLength(3);
    // SIGTERM while the upgrade's register call is in flight; the API has already superseded session-1.
    const stopping = h.session.source.stop();
    answer({ ok: true, body: registration('session-2', { protocolVersion: 5 }) });
    await stopping;
    await vi.advanceTimersByTimeAsync(10_000);
    expect(h.session.session?.sessionId).toBe('session-2');
    const last = h.client.of('runtime').at(-1)!.body as { sessionId: string; draining: boolean };
    expect(last).toMatchObject({ sessionId: 'session-2', draining: true });
    await h.session.reporter.stop();
  });

  // Draining with every count zero hands every proxy over at once (drain.ts shutDownIdle). A /v1/fetch
  // admitted before the drain and redialled runs the guard's look-up again, holding no proxy meanwhile: a
  // report then read idle, the proxies went to other workers, and the redial picked one of them after.
  it('holds an idle draining report while an admitted request still waits for its look-up', async () => {
    const h = harness();
    await h.start();
    await h.feed.deliver(feedMessage(snapshot(1, ['p-a'])));
    await vi.advanceTimersByTimeAsync(1_000);
    h.worker.checking = 1;
    await h.session.source.stop();
    await vi.advanceTimersByTimeAsync(30_000);
    const idleDraining = () => idleDrainingReports(h);
    expect(idleDraining()).toHaveLength(0);
    h.worker.checking = 0;
    await vi.advanceTimersByTimeAsync(30_000);
    expect(idleDraining().length).toBeGreaterThan(0);
    await h.session.reporter.stop();
  });

  it('an idle draining report held behind an ACK reads the look-ups with its counts, at the same moment', async () => {
    // Checked before it queued behind the ACK, the report saw a reservation and no look-up; by the time it
    // went, the reservation's dial had failed and its redial was back at the look-up — counts [] while a
    // request was still to pick a proxy, and the controller handed every proxy over at once.
    const h = harness();
    await h.start();
    await h.feed.deliver(feedMessage(snapshot(1, ['p-a'])));
    await vi.advanceTimersByTimeAsync(1_000);
    let counts = [{ proxy: 'p-a', active: 0, reserved: 1, draining: false }];
    vi.spyOn(h.worker, 'runtimeCounts').mockImplementation(() => counts);
    let answerAck!: () => void;
    const heldAck = () =>
      new Promise((resolve) => {
        answerAck = () =>
          resolve({ ok: true, body: { acceptedVersion: 2, acceptedEpoch: 1, unchanged: false } });
      });
    h.script('ack', heldAck as never);
    void h.feed.deliver(feedMessage(snapshot(2, ['p-a'])));
    await flush();
    expect(h.client.of('ack')).toHaveLength(2);
    void h.session.source.stop();
    await flush();
    counts = [];
    h.worker.checking = 1;
    answerAck();
    await flush();
    const idleDraining = () => idleDrainingReports(h);
    expect(idleDraining()).toHaveLength(0);
    h.worker.checking = 0;
    await h.session.reporter.stop();
    expect(idleDraining()).toHaveLength(1);
  });

  it('sends the final report at the end of the drain whatever is still looked up', async () => {
    const h = harness();
    await h.start();
    await h.feed.deliver(feedMessage(snapshot(1, ['p-a'])));
    await vi.advanceTimersByTimeAsync(1_000);
    h.worker.checking = 1;
    await h.session.source.stop();
    const before = h.client.of('runtime').length;
    await h.session.reporter.stop();
    const last = h.client.of('runtime').at(-1)!.body as { draining: boolean; counts: unknown[] };
    expect(h.client.of('runtime').length).toBeGreaterThan(before);
    expect(last).toMatchObject({ draining: true, counts: [] });
  });

  it('a session granted at its highest protocol never re-registers on its own', async () => {
    const h = harness({ settings: { protocolUpgradeRetryMs: 60_000 } });
    await h.start();
    await vi.advanceTimersByTimeAsync(600_000);
    expect(h.client.of('register')).toHaveLength(1);
    await h.session.reporter.stop();
  });

  it('refuses to start when the controller speaks none of its protocols (no silent downgrade)', async () => {
    const h = harness();
    for (let v = 5; v >= 1; v--) h.script('register', refusal(400, 'unsupported_protocol_version'));
    await h.start();
    await expect(h.started).rejects.toMatchObject({ kind: 'session_fatal' });
    await vi.advanceTimersByTimeAsync(60_000);
    expect(h.client.of('register')).toHaveLength(5);
    expect(h.fatal).toHaveLength(1);
    expect(h.feed.opened).toEqual([]);
  });

  it('hands the registration max stale age to the worker', async () => {
    const h = harness();
    h.script('register', { ok: true, body: registration('s-1', { maxStaleAgeSeconds: 10 }) });
    await h.start();
    await h.feed.deliver(feedMessage(snapshot(1, ['p-a'])));
    expect(h.worker.phase()).toBe('fresh');
    await vi.advanceTimersByTimeAsync(10_001);
    h.worker.tick();
    expect(h.worker.phase()).toBe('stale');
  });
});

describe('snapshots', () => {
  it('full snapshot → applied → ACKed to the controller → Pub/Sub ack; start() resolves', async () => {
    const h = harness();
    await h.start();
    const s1 = snapshot(1, ['p-a', 'p-b']);
    expect(await h.feed.deliver(feedMessage(s1))).toBe('ack');
    await h.started;
    await flush();
    expect(h.worker.snapshot()?.version).toBe(1);
    expect(h.client.of('ack').map((c) => c.body)).toEqual([
      { sessionId: 'session-1', version: 1, epoch: 1, checksum: s1.checksum },
    ]);
    expect(h.session.ackBound).toEqual({ version: 1, epoch: 1 });
  });

  it('a delta pulled right behind a large snapshot still in slices waits for it: applied in order, nothing fetched', async () => {
    const h = harness();
    await h.start();
    const names = Array.from({ length: 3_000 }, (_, i) => `p-${String(i).padStart(5, '0')}`);
    const s1 = snapshot(1, names);
    const s2 = snapshot(2, [...names, 'p-new']);
    // Both pulled at once (the feed hands over up to four messages): the delta is small, decoded in one
    // slice, the snapshot in six; the pull hands them to the session one at a time (snapshot-pull.ts).
    const verdicts = Promise.all([
      h.feed.deliver(feedMessage(s1)),
      h.feed.deliver(feedMessage(buildDelta(s1, s2, sha256Hex))),
    ]);
    for (let i = 0; i < 50 && h.worker.snapshot()?.version !== 2; i++) await flush();
    expect(await verdicts).toEqual(['ack', 'ack']);
    expect(h.worker.snapshot()?.version).toBe(2);
    expect(h.client.of('latestSnapshot')).toHaveLength(0);
    expect(h.session.counters.refused).toBe(0);
  });

  it('a delta on the applied base applies and is ACKed, without fetching anything', async () => {
    const h = harness();
    await h.start();
    const s1 = snapshot(1, ['p-a']);
    const s2 = snapshot(2, ['p-a', 'p-b']);
    await h.feed.deliver(feedMessage(s1));
    expect(await h.feed.deliver(feedMessage(buildDelta(s1, s2, sha256Hex)))).toBe('ack');
    await flush();
    expect(h.worker.snapshot()?.version).toBe(2);
    expect(h.client.of('latestSnapshot')).toHaveLength(0);
    expect(h.client.of('ack').map((c) => (c.body as { version: number }).version)).toEqual([1, 2]);
  });

  it.each([
    ['on another base', (d: ReturnType<typeof buildDelta>) => ({ ...d, baseVersion: 7, version: 8 })],
    [
      'with a checksum that does not verify',
      (d: ReturnType<typeof buildDelta>) => ({ ...d, checksum: 'a'.repeat(64) }),
    ],
  ])('a delta %s is dropped and the full snapshot fetched, applied and ACKed', async (_l, spoil) => {
    const h = harness();
    await h.start();
    const s1 = snapshot(1, ['p-a']);
    const s3 = snapshot(3, ['p-c']);
    await h.feed.deliver(feedMessage(s1));
    h.script('latestSnapshot', { ok: true, body: s3 });
    const bad = spoil(buildDelta(s1, snapshot(2, ['p-b']), sha256Hex));
    expect(await h.feed.deliver(feedMessage(bad))).toBe('ack');
    await vi.advanceTimersByTimeAsync(1_000);
    expect(h.client.of('latestSnapshot').map((c) => c.body)).toEqual([{ sessionId: 'session-1' }]);
    expect(h.worker.snapshot()?.version).toBe(3);
    expect(h.client.of('ack').map((c) => (c.body as { version: number }).version)).toEqual([1, 3]);
  });

  it('a fetched snapshot answered after the session stopped is not applied', async () => {
    const h = harness();
    await h.start();
    const answer = held(h, 'latestSnapshot');
    await h.feed.deliver(feedMessage(buildDelta(snapshot(1, []), snapshot(2, ['p-b']), sha256Hex)));
    await vi.advanceTimersByTimeAsync(1_000);
    expect(h.client.of('latestSnapshot')).toHaveLength(1);
    const stopped = h.session.reporter.stop();
    await vi.advanceTimersByTimeAsync(5_000);
    await stopped;
    answer({ ok: true, body: snapshot(2, ['p-b']) });
    await vi.advanceTimersByTimeAsync(1_000);
    expect(h.worker.snapshot()).toBeNull();
  });

  it('a delta before any snapshot fetches the full one', async () => {
    const h = harness();
    await h.start();
    h.script('latestSnapshot', { ok: true, body: snapshot(2, ['p-b']) });
    await h.feed.deliver(feedMessage(buildDelta(snapshot(1, []), snapshot(2, ['p-b']), sha256Hex)));
    await vi.advanceTimersByTimeAsync(1_000);
    expect(h.worker.snapshot()?.version).toBe(2);
  });

  it.each([
    [
      'addressed to another worker (the emulator does not filter)',
      feedMessage(snapshot(1, ['p-x'], 1, 'gw-2')),
      'foreign',
    ],
    ['not JSON', feedMessage('{nope'), 'poison'],
    ['not the wire schema', feedMessage(JSON.stringify({ kind: 'full', version: 'one' })), 'poison'],
    [
      'with attributes that contradict the payload',
      feedMessage(snapshot(1, ['p-a']), { version: '9' }),
      'poison',
    ],
    [
      'whose payload names another worker',
      feedMessage(snapshot(1, ['p-a'], 1, 'gw-2'), { workerId: WORKER }),
      'poison',
    ],
  ])('a message %s is acked and not applied', async (_l, message, counter) => {
    const h = harness();
    await h.start();
    expect(await h.feed.deliver(message)).toBe('ack');
    await flush();
    expect(h.worker.snapshot()).toBeNull();
    expect(h.session.counters[counter as 'foreign' | 'poison']).toBe(1);
    expect(h.client.of('ack')).toHaveLength(0);
  });

  it('an older or conflicting snapshot is refused without a fetch; a re-delivery is a harmless duplicate', async () => {
    const h = harness();
    await h.start();
    const s2 = snapshot(2, ['p-a']);
    await h.feed.deliver(feedMessage(s2));
    await flush();
    await h.feed.deliver(feedMessage(snapshot(1, ['p-a'])));
    await h.feed.deliver(feedMessage(snapshot(2, ['p-b'])));
    await h.feed.deliver(feedMessage(s2));
    await vi.advanceTimersByTimeAsync(2_000);
    expect(h.session.counters.refused).toBe(2);
    expect(h.client.of('latestSnapshot')).toHaveLength(0);
    expect(h.client.of('ack')).toHaveLength(1);
  });

  it('a snapshot of an epoch below the one registration reported is refused, even with nothing applied yet', async () => {
    // A pinned worker id's subscription keeps what its previous process left unacknowledged (contract §2:
    // data of a lower epoch must be rejected); the controller is at epoch 3 when this process registers,
    // and still stores that old snapshot for a fetch until the pass the registration asked for has run.
    const h = harness({ settings: { firstSnapshotWaitMs: 3_000 } });
    h.script('register', { ok: true, body: registration('s-1', { ownershipEpoch: 3 }) });
    h.script('latestSnapshot', { ok: true, body: snapshot(7, ['p-old'], 2) });
    await h.start();
    expect(await h.feed.deliver(feedMessage(snapshot(7, ['p-old'], 2)))).toBe('ack');
    await flush();
    expect(h.worker.snapshot()).toBeNull();
    expect(h.session.counters.refused).toBe(1);
    await vi.advanceTimersByTimeAsync(3_000); // the first-snapshot fallback fetches the stored one
    expect(h.client.of('latestSnapshot')).toHaveLength(1);
    expect(h.worker.snapshot()).toBeNull();
    expect(h.session.counters.refused).toBe(2);
    expect(h.client.of('ack')).toHaveLength(0);
    await h.feed.deliver(feedMessage(snapshot(1, ['p-new'], 3)));
    await flush();
    expect(h.worker.snapshot()?.version).toBe(1);
    expect(h.client.of('ack')).toHaveLength(1);
  });

  it('a re-delivered older delta, or one conflicting with the applied version, is refused without a fetch', async () => {
    // Pub/Sub is at-least-once: the delta 1→2 may come again after 2→3 was applied. It is older than what
    // runs (docs/gateway.md § Controller session: "older / conflicting / other epoch ─► logged, dropped"),
    // and no full snapshot can make it apply.
    const h = harness();
    await h.start();
    const s1 = snapshot(1, ['p-a']);
    const s2 = snapshot(2, ['p-a', 'p-b']);
    const s3 = snapshot(3, ['p-b']);
    await h.feed.deliver(feedMessage(s1));
    const d12 = buildDelta(s1, s2, sha256Hex);
    await h.feed.deliver(feedMessage(d12));
    await h.feed.deliver(feedMessage(buildDelta(s2, s3, sha256Hex)));
    expect(h.worker.snapshot()?.version).toBe(3);
    expect(await h.feed.deliver(feedMessage(d12))).toBe('ack');
    // Version 3 again, on base 2, with other content: a conflict a full snapshot of version 3 cannot cure.
    expect(await h.feed.deliver(feedMessage(buildDelta(s2, snapshot(3, ['p-c']), sha256Hex)))).toBe('ack');
    await vi.advanceTimersByTimeAsync(5_000);
    expect(h.session.counters.refused).toBe(2);
    expect(h.client.of('latestSnapshot')).toHaveLength(0);
    expect(h.worker.snapshot()?.version).toBe(3);
    expect(h.worker.snapshot()?.checksum).toBe(s3.checksum);
  });

  it('a wall clock stepped back does not hold the next fetch (nor a 429 the next report) for the size of the step', async () => {
    // The waits between calls are durations, on the monotonic clock; only what goes on the wire
    // (observedAt) and /healthz read the wall clock.
    let step = 0;
    const h = harness({ now: () => Date.now() + step, monotonicNow: () => Date.now() });
    await h.start();
    const s1 = snapshot(1, ['p-a']);
    h.script('latestSnapshot', { ok: true, body: s1 });
    await vi.advanceTimersByTimeAsync(3_000); // nothing on the pull: the first fetch
    expect(h.client.of('latestSnapshot')).toHaveLength(1);
    await flush();
    h.script('runtime', refusal(429, 'rate_limited', 1_000));
    await vi.advanceTimersByTimeAsync(5_000); // a report, refused 429: quiet for 1 s
    const reportsBefore = h.client.of('runtime').length;
    step = -3_600_000; // NTP steps the wall clock back an hour
    const s3 = snapshot(3, ['p-c']);
    h.script('latestSnapshot', { ok: true, body: s3 });
    await h.feed.deliver(feedMessage(buildDelta(snapshot(2, ['p-b']), s3, sha256Hex)));
    await vi.advanceTimersByTimeAsync(2_000);
    expect(h.client.of('latestSnapshot')).toHaveLength(2);
    expect(h.worker.snapshot()?.version).toBe(3);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(h.client.of('runtime').length).toBeGreaterThan(reportsBefore);
  });

  it('a fetch waiting out the 1 s spacing is dropped when Pub/Sub brings a snapshot meanwhile', async () => {
    const h = harness();
    await h.start();
    const s1 = snapshot(1, ['p-a']);
    const s2 = snapshot(2, ['p-b']);
    await h.feed.deliver(feedMessage(s1));
    const bad = (d: ReturnType<typeof buildDelta>) => ({
      ...d,
      baseVersion: d.version + 5,
      version: d.version + 6,
    });
    h.script('latestSnapshot', { ok: true, body: s2 });
    await h.feed.deliver(feedMessage(bad(buildDelta(s1, s2, sha256Hex)))); // GET at once
    await flush();
    expect(h.worker.snapshot()?.version).toBe(2);
    await vi.advanceTimersByTimeAsync(300);
    await h.feed.deliver(feedMessage(bad(buildDelta(s2, snapshot(3, ['p-c']), sha256Hex)))); // waits 0.7 s
    await vi.advanceTimersByTimeAsync(200);
    // The pull catches up first, to the version the refused delta named (9): nothing left to fetch.
    await h.feed.deliver(feedMessage(snapshot(9, ['p-d'])));
    await vi.advanceTimersByTimeAsync(5_000);
    expect(h.worker.snapshot()?.version).toBe(9);
    expect(h.client.of('latestSnapshot')).toHaveLength(1);
  });

  it('a fetch is not called off by a re-delivery of the snapshot already applied (Pub/Sub is at-least-once)', async () => {
    const h = harness();
    await h.start();
    const s1 = snapshot(1, ['p-a']);
    const s3 = snapshot(3, ['p-c']);
    await h.feed.deliver(feedMessage(s1));
    await flush();
    h.script('latestSnapshot', refusal(503, 'unavailable'), { ok: true, body: s3 });
    // Version 2 was missed: the delta 2→3 does not apply, the GET is refused once and waits its backoff…
    await h.feed.deliver(feedMessage(buildDelta(snapshot(2, ['p-b']), s3, sha256Hex)));
    await flush();
    expect(h.client.of('latestSnapshot')).toHaveLength(1);
    // …while Pub/Sub delivers version 1 again: nothing new, so the worker is still behind.
    await h.feed.deliver(feedMessage(s1));
    await vi.advanceTimersByTimeAsync(2_000);
    expect(h.client.of('latestSnapshot')).toHaveLength(2);
    expect(h.worker.snapshot()?.version).toBe(3);
    expect(h.client.of('ack').map((c) => (c.body as { version: number }).version)).toEqual([1, 3]);
  });

  it('a delta refused while a GET is in flight is fetched for once the GET brought an older snapshot', async () => {
    const h = harness();
    await h.start();
    const s1 = snapshot(1, ['p-a']);
    const s3 = snapshot(3, ['p-c']);
    const s4 = snapshot(4, ['p-c', 'p-d']);
    await h.feed.deliver(feedMessage(s1));
    await flush();
    let answer: (a: unknown) => void = () => {};
    h.script(
      'latestSnapshot',
      (() =>
        new Promise((r) => {
          answer = r;
        })) as unknown as Script,
      { ok: true, body: s4 },
    );
    await h.feed.deliver(feedMessage(buildDelta(snapshot(2, ['p-b']), s3, sha256Hex))); // GET, held
    await flush();
    // The controller moves on to 4 meanwhile; its delta does not apply on 1 either.
    await h.feed.deliver(feedMessage(buildDelta(s3, s4, sha256Hex)));
    answer({ ok: true, body: s3 }); // read before 4 was stored
    await vi.advanceTimersByTimeAsync(2_000);
    expect(h.client.of('latestSnapshot')).toHaveLength(2);
    expect(h.worker.snapshot()?.version).toBe(4);
  });

  it('nothing on the pull within a few seconds → GET the latest snapshot (404: wait for Pub/Sub)', async () => {
    const h = harness({ settings: { firstSnapshotWaitMs: 3_000 } });
    await h.start();
    await vi.advanceTimersByTimeAsync(2_999);
    expect(h.client.of('latestSnapshot')).toHaveLength(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(h.client.of('latestSnapshot')).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(30_000);
    expect(h.client.of('latestSnapshot')).toHaveLength(1);

    const g = harness({ settings: { firstSnapshotWaitMs: 3_000 } });
    g.script('latestSnapshot', refusal(503, 'unavailable'), { ok: true, body: snapshot(4, ['p-a']) });
    await g.start();
    await vi.advanceTimersByTimeAsync(5_000);
    expect(g.client.of('latestSnapshot')).toHaveLength(2);
    expect(g.worker.snapshot()?.version).toBe(4);
    expect(g.client.of('ack')).toHaveLength(1);
  });

  it('a new session ends the wait a fetch refused under the old one is in, and starts its backoff over', async () => {
    const h = harness({
      settings: { backoff: { initialMs: 500, maxMs: 30_000 }, firstSnapshotWaitMs: 3_000 },
    });
    h.script('latestSnapshot', ...Array.from({ length: 7 }, () => refusal(503, 'unavailable')));
    h.script('latestSnapshot', { ok: true, body: snapshot(1, ['p-a']) });
    await h.start();
    // GETs at 3, 4, 5, 6, 8 and 12 s (the backoff's half steps, none sooner than 1 s apart): in an 8 s wait.
    await vi.advanceTimersByTimeAsync(13_000);
    expect(h.client.of('latestSnapshot')).toHaveLength(6);
    h.session.reregister('session-1');
    await vi.advanceTimersByTimeAsync(1_500);
    const second = h.client
      .of('latestSnapshot')
      .filter((c) => (c.body as { sessionId: string }).sessionId === 'session-2');
    // At once, then 1 s on (the first step, 250 ms, held to the GETs' spacing), not 16 s on.
    expect(gaps(second.map((c) => c.at))).toEqual([1_000]);
    expect(h.worker.snapshot()?.version).toBe(1);
  });

  it('a session nothing keeps alive (no snapshot: no ACK, no report) is probed once its TTL has passed, and registered again when it lapsed', async () => {
    // The first snapshot did not come (the pass its registration asked for failed, and the session lapsed
    // before the next tick, which builds snapshots only for live sessions): without a call of its own the
    // worker would never learn that its session is gone, and wait for a snapshot for ever.
    const h = harness({ settings: { firstSnapshotWaitMs: 3_000 } });
    await h.start();
    await vi.advanceTimersByTimeAsync(3_000);
    expect(h.client.of('latestSnapshot')).toHaveLength(1); // 404: wait for Pub/Sub
    h.script('latestSnapshot', refusal(409, 'session_expired'));
    // Not within the session TTL (30 s from the grant): the pass may still be on its way.
    await vi.advanceTimersByTimeAsync(27_000);
    expect(h.client.of('latestSnapshot')).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(5_000);
    expect(h.client.of('latestSnapshot')).toHaveLength(2);
    expect(h.client.of('register')).toHaveLength(2);
    expect(h.session.session?.sessionId).toBe('session-2');
    // The new session's snapshot arrives: ACKed, reported on; no more probes (within half the max stale
    // age: past it, a quiet pull fetches the latest, a test of its own).
    await h.feed.deliver(feedMessage(snapshot(1, ['p-a'])));
    const fetched = h.client.of('latestSnapshot').length;
    await vi.advanceTimersByTimeAsync(70_000);
    expect(h.client.of('latestSnapshot')).toHaveLength(fetched);
    expect(h.session.ackBound).toEqual({ version: 1, epoch: 1 });
  });

  it('an ACK refused for good leaves nothing to report on: the session is probed after its TTL too', async () => {
    const h = harness();
    h.script('ack', refusal(409, 'stale_epoch'));
    await h.start();
    await h.feed.deliver(feedMessage(snapshot(1, ['p-a'])));
    await vi.advanceTimersByTimeAsync(30_000);
    expect(h.client.of('latestSnapshot')).toHaveLength(0);
    h.script('latestSnapshot', refusal(409, 'session_expired'));
    await vi.advanceTimersByTimeAsync(5_000);
    expect(h.client.of('register')).toHaveLength(2);
    expect(h.client.of('ack').map((c) => (c.body as { sessionId: string }).sessionId)).toEqual([
      'session-1',
      'session-2',
    ]);
    expect(h.session.ackBound).toEqual({ version: 1, epoch: 1 });
  });

  it('a pull whose subscription is gone (NOT_FOUND) registers again, which makes it, and fetches what it missed', async () => {
    const h = harness();
    await h.start();
    await h.feed.deliver(feedMessage(snapshot(1, ['p-a', 'p-b'])));
    await flush();
    // The same live instance gets its session back; the API makes the subscription again on the way.
    h.script('register', {
      ok: true,
      body: registration('session-1', { resumed: true, protocolVersion: 5 }),
    });
    h.script('latestSnapshot', { ok: true, body: snapshot(3, ['p-a']) });
    h.feed.end(Object.assign(new Error('5 NOT_FOUND: Resource not found'), { code: 5 }));
    await vi.advanceTimersByTimeAsync(250);
    expect(h.client.of('register')).toHaveLength(2);
    expect(h.feed.opened).toEqual([SUBSCRIPTION, SUBSCRIPTION]);
    expect(h.session.session?.sessionId).toBe('session-1');
    // Version 2 went out while there was no subscription: fetched, not waited for.
    await vi.advanceTimersByTimeAsync(1_000);
    expect(h.client.of('latestSnapshot')).toHaveLength(1);
    expect(h.worker.snapshot()?.version).toBe(3);
    expect(h.client.of('ack').map((c) => (c.body as { version: number }).version)).toEqual([1, 3]);
  });

  it('a delta that does not apply while the session is being re-registered is fetched once it is back', async () => {
    const h = harness();
    await h.start();
    const s1 = snapshot(1, ['p-a']);
    await h.feed.deliver(feedMessage(s1));
    await flush();
    // The session is lost; registering again takes a retry (and gives the same session back).
    h.script('runtime', refusal(409, 'stale_session'));
    h.script('register', refusal(503, 'unavailable'), {
      ok: true,
      body: registration('session-1', { resumed: true, protocolVersion: 5 }),
    });
    await vi.advanceTimersByTimeAsync(5_000);
    expect(h.session.session).toBeNull();
    // Meanwhile a delta on a base this worker never had: the full snapshot is wanted, but no session.
    const d = buildDelta(snapshot(7, ['p-a']), snapshot(8, ['p-a', 'p-b']), sha256Hex);
    await h.feed.deliver(feedMessage(d));
    await flush();
    expect(h.client.of('latestSnapshot')).toHaveLength(0);
    h.script('latestSnapshot', { ok: true, body: snapshot(8, ['p-a', 'p-b']) });
    await vi.advanceTimersByTimeAsync(1_000);
    expect(h.session.session?.sessionId).toBe('session-1');
    expect(h.client.of('latestSnapshot')).toHaveLength(1);
    expect(h.worker.snapshot()?.version).toBe(8);
  });

  it('a pull whose subscription stays gone keeps registering again only after a growing backoff', async () => {
    const h = harness();
    h.client.defaults.register = () => ({
      ok: true,
      body: registration('session-1', { resumed: true, protocolVersion: 5 }),
    });
    await h.start();
    const notFound = () => Object.assign(new Error('5 NOT_FOUND'), { code: 5 });
    const waits: number[] = [];
    for (let i = 0; i < 4; i++) {
      const endedAt = Date.now();
      h.feed.end(notFound());
      await vi.advanceTimersByTimeAsync(10_000);
      waits.push(h.client.of('register').at(-1)!.at - endedAt);
    }
    // One registration per end, each after the pull's backoff step (random = 0: half of it): never a loop.
    expect(h.client.of('register')).toHaveLength(5);
    expect(waits).toEqual([250, 500, 1_000, 2_000]);
    expect(h.feed.opened).toHaveLength(5);
  });

  it('a pull that stays open but brings nothing for the max stale age is reopened (a stream wedged without an error)', async () => {
    // Every live worker gets a renewed snapshot at every tick: nothing for maxStaleAgeSeconds means the
    // controller is away or the stream stopped delivering without closing (a known failure of streaming
    // pulls), which no error would ever reopen, while the worker's reports kept its session and proxies.
    const h = harness();
    await h.start();
    await h.feed.deliver(feedMessage(snapshot(1, ['p-a'])));
    await flush();
    await vi.advanceTimersByTimeAsync(140_000);
    await h.feed.deliver(feedMessage(snapshot(2, ['p-a']))); // messages keep it open
    await vi.advanceTimersByTimeAsync(140_000);
    expect(h.feed.opened).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(15_000); // 155 s without a message (max stale age 150 s)
    expect(h.feed.opened).toEqual([SUBSCRIPTION, SUBSCRIPTION]);
    expect(h.feed.closed).toBe(1);
    expect(h.feed.open_).toBe(true);
    // Not again before another max stale age of silence.
    await vi.advanceTimersByTimeAsync(140_000);
    expect(h.feed.opened).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(15_000);
    expect(h.feed.opened).toHaveLength(3);
  });

  it('nothing on the pull for half the max stale age fetches the latest snapshot: a worker Pub/Sub fails stays fresh', async () => {
    // The controller stores each version before it publishes it: a worker whose pull delivers nothing (a
    // wedged stream, a subscription refused, a snapshot too large to publish) fetches it before it would go
    // stale, instead of serving 503 while its reports keep its session and its proxies.
    const h = harness();
    await h.start();
    await h.feed.deliver(feedMessage(snapshot(1, ['p-a'])));
    await flush();
    h.script(
      'latestSnapshot',
      { ok: true, body: snapshot(2, ['p-a']) },
      { ok: true, body: snapshot(3, ['p-a']) },
    );
    await vi.advanceTimersByTimeAsync(70_000);
    expect(h.client.of('latestSnapshot')).toHaveLength(0);
    await vi.advanceTimersByTimeAsync(10_000); // 80 s without a message (max stale age 150 s)
    expect(h.client.of('latestSnapshot')).toHaveLength(1);
    expect(h.worker.snapshot()?.version).toBe(2);
    await vi.advanceTimersByTimeAsync(70_000); // not again within the next 75 s
    expect(h.client.of('latestSnapshot')).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(h.client.of('latestSnapshot')).toHaveLength(2);
    expect(h.worker.snapshot()?.version).toBe(3);
    // Closed by an error and reopened meanwhile: the quiet is counted from the last message all the same.
    h.feed.end();
    await vi.advanceTimersByTimeAsync(80_000);
    expect(h.client.of('latestSnapshot')).toHaveLength(3);
  });

  it('a pull bringing only messages it cannot use (poison, refused) still fetches the latest at half the max stale age', async () => {
    const h = harness();
    await h.start();
    await h.feed.deliver(feedMessage(snapshot(5, ['p-a'])));
    await flush();
    h.script('latestSnapshot', { ok: true, body: snapshot(6, ['p-a']) });
    for (let t = 0; t < 80; t += 10) {
      await h.feed.deliver(feedMessage('{"not a snapshot"')); // poison
      await h.feed.deliver(feedMessage(snapshot(4, ['p-a']))); // older: refused
      await vi.advanceTimersByTimeAsync(10_000);
    }
    expect(h.client.of('latestSnapshot')).toHaveLength(1);
    expect(h.worker.snapshot()?.version).toBe(6);
  });

  it('a pull that cannot be reopened never costs a runtime report (reports keep the session alive)', async () => {
    const h = harness();
    await h.start();
    await h.feed.deliver(feedMessage(snapshot(1, ['p-a'])));
    await flush();
    h.feed.open = () => {
      throw new Error('A name must be specified for a subscription.');
    };
    await vi.advanceTimersByTimeAsync(150_000);
    const before = h.client.of('runtime').length;
    await vi.advanceTimersByTimeAsync(10_000); // past the max stale age: the reopen fails
    expect(h.lines.some((l) => l.message === 'snapshot pull could not be reopened')).toBe(true);
    expect(h.client.of('runtime').length).toBe(before + 2);
  });

  it('a pull that ends by itself is reopened after a backoff', async () => {
    const h = harness();
    await h.start();
    h.feed.end();
    expect(h.feed.open_).toBe(false);
    await vi.advanceTimersByTimeAsync(249);
    expect(h.feed.opened).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(h.feed.opened).toEqual([SUBSCRIPTION, SUBSCRIPTION]);
  });
});

describe('ACK refusals', () => {
  async function applied(h: ReturnType<typeof harness>, ...ackAnswers: Script[]) {
    h.script('ack', ...ackAnswers);
    await h.start();
    await h.feed.deliver(feedMessage(snapshot(1, ['p-a'])));
    await flush();
  }

  it('unknown_snapshot → fetch the latest once, apply, ACK it', async () => {
    const h = harness();
    h.script('latestSnapshot', { ok: true, body: snapshot(2, ['p-b']) });
    await applied(h, refusal(409, 'unknown_snapshot'));
    await vi.advanceTimersByTimeAsync(1_000);
    expect(h.client.of('latestSnapshot')).toHaveLength(1);
    expect(h.client.of('ack').map((c) => (c.body as { version: number }).version)).toEqual([1, 2]);
    expect(h.session.ackBound).toEqual({ version: 2, epoch: 1 });
  });

  it('the same checksum_mismatch after a fetch does not loop', async () => {
    const h = harness();
    h.script('latestSnapshot', { ok: true, body: snapshot(1, ['p-a']) });
    await applied(h, refusal(409, 'checksum_mismatch'), refusal(409, 'checksum_mismatch'));
    await vi.advanceTimersByTimeAsync(30_000);
    expect(h.client.of('latestSnapshot')).toHaveLength(1);
    expect(h.client.of('ack')).toHaveLength(2);
    expect(h.session.ackBound).toBeNull();
  });

  it.each([['stale_epoch'], ['version_regression']])('%s → wait for the next snapshot', async (code) => {
    const h = harness();
    await applied(h, refusal(409, code));
    await vi.advanceTimersByTimeAsync(30_000);
    expect(h.client.of('ack')).toHaveLength(1);
    expect(h.client.of('latestSnapshot')).toHaveLength(0);
  });

  it('an ACK given up under one session is tried again under the next (its refusal said nothing of it)', async () => {
    const h = harness();
    await applied(h, refusal(409, 'stale_epoch'));
    await vi.advanceTimersByTimeAsync(1_000);
    expect(h.client.of('ack')).toHaveLength(1);
    h.session.reregister('session-1');
    await flush();
    expect(h.client.of('ack').map((c) => (c.body as { sessionId: string }).sessionId)).toEqual([
      'session-1',
      'session-2',
    ]);
    expect(h.session.ackBound).toEqual({ version: 1, epoch: 1 });
  });

  it.each([['stale_epoch'], ['version_regression'], ['invalid_request'], ['unknown_snapshot']])(
    "a %s refusal of the old session's ACK that lands after registering again says nothing of the new session: it ACKs",
    async (code) => {
      // The refusal came for session-1's call while session-2 was granted: given up on (or fetched for)
      // after the new session had cleared the loop's state, it kept session-2 from ever ACKing — no bound,
      // no reports, never given proxies — until the TTL's probe.
      const h = harness();
      const answer = held(h, 'ack');
      await applied(h);
      expect(h.client.of('ack')).toHaveLength(1);
      h.session.reregister('session-1');
      await flush();
      expect(h.session.session?.sessionId).toBe('session-2');
      answer(refusal(code === 'invalid_request' ? 400 : 409, code));
      await flush();
      expect(h.client.of('ack').map((c) => (c.body as { sessionId: string }).sessionId)).toEqual([
        'session-1',
        'session-2',
      ]);
      expect(h.session.ackBound).toEqual({ version: 1, epoch: 1 });
      expect(h.client.of('latestSnapshot')).toHaveLength(0);
    },
  );

  it.each([['stale_session'], ['session_expired'], ['unknown_worker']])(
    '%s → register again (a new session), then ACK under it',
    async (code) => {
      const h = harness();
      await applied(h, refusal(409, code));
      await flush();
      expect(h.client.of('register')).toHaveLength(2);
      expect(h.client.of('ack').map((c) => (c.body as { sessionId: string }).sessionId)).toEqual([
        'session-1',
        'session-2',
      ]);
      expect(h.session.ackBound).toEqual({ version: 1, epoch: 1 });
      expect(h.feed.opened).toEqual([SUBSCRIPTION]);
    },
  );

  it('503 → retried with backoff until accepted', async () => {
    const h = harness();
    await applied(h, refusal(503, 'unavailable'), refusal(0));
    await vi.advanceTimersByTimeAsync(1_000);
    expect(gaps(h.client.of('ack').map((c) => c.at))).toEqual([250, 500]);
    expect(h.session.ackBound).toEqual({ version: 1, epoch: 1 });
  });

  it('a new session ends the wait an ACK refused under the old one is in, and starts its backoff over', async () => {
    // The session's default backoff (to 30 s): waited out under session-2, session-1's step held the ACK
    // the new session needs — no ACK bound, no report to keep it — past its 30 s TTL.
    const h = harness({ settings: { backoff: { initialMs: 500, maxMs: 30_000 } } });
    await applied(h, ...Array.from({ length: 6 }, () => refusal(503, 'unavailable')));
    // Refused at 0, 0.25, 0.75, 1.75, 3.75 and 7.75 s (random 0: half of each step): in an 8 s wait.
    await vi.advanceTimersByTimeAsync(9_000);
    expect(h.client.of('ack')).toHaveLength(6);
    h.script('ack', refusal(503, 'unavailable'));
    h.session.reregister('session-1');
    await vi.advanceTimersByTimeAsync(1_000);
    const second = h.client
      .of('ack')
      .filter((c) => (c.body as { sessionId: string }).sessionId === 'session-2');
    // At once, then the first step again (250 ms), not the next one (16 s).
    expect(gaps(second.map((c) => c.at))).toEqual([250]);
    expect(h.session.ackBound).toEqual({ version: 1, epoch: 1 });
  });
});

describe('reports', () => {
  async function acked(h: ReturnType<typeof harness>) {
    await h.start();
    await h.feed.deliver(feedMessage(snapshot(1, ['p-a', 'p-b'])));
    await flush();
  }
  const sequenceOf = (c: { body: unknown }) => [
    (c.body as { sessionId: string }).sessionId,
    (c.body as { reportSequence: number }).reportSequence,
  ];

  it('runtime reports sit on the ACK bound with a strictly increasing sequence: at once, then at the interval', async () => {
    const h = harness();
    await acked(h);
    await vi.advanceTimersByTimeAsync(10_000);
    const bodies = h.client.of('runtime').map((c) => c.body as Record<string, unknown>);
    expect(bodies.map((b) => b.reportSequence)).toEqual([1, 2, 3]);
    expect(bodies[0]).toMatchObject({
      sessionId: 'session-1',
      snapshotVersion: 1,
      epoch: 1,
      draining: false,
      counts: [],
    });
    expect(gaps(h.client.of('runtime').map((c) => c.at))).toEqual([5_000, 5_000]);
  });

  it('revokeProxyIds stop new use of those proxies at once, for as long as the controller lists them', async () => {
    const h = harness();
    const revoking = (acceptedSequence: number) => ({
      ok: true as const,
      body: { acceptedSequence, replay: false, revokeProxyIds: ['p-a'], reportTtlSeconds: 15 },
    });
    h.script('runtime', revoking(1), revoking(2));
    const picks = () => {
      const seen = new Set<string>();
      for (let i = 0; i < 20; i++) {
        const p = h.worker.pick('example.com', Date.now(), {
          stickyValue: () => undefined,
          stickyOwner: () => '',
        });
        if (p.kind === 'ok') seen.add(p.upstream.name);
      }
      return [...seen].sort();
    };
    await acked(h);
    await vi.advanceTimersByTimeAsync(5_000);
    expect(h.client.of('runtime')).toHaveLength(2);
    expect(picks()).toEqual(['p-b']);
    // The next answer no longer lists it (the drain was cancelled): p-a is back.
    await vi.advanceTimersByTimeAsync(5_000);
    expect(h.client.of('runtime')).toHaveLength(3);
    expect(picks()).toEqual(['p-a', 'p-b']);
  });

  it('a report refused as stale_epoch (a drain started; its snapshot is not here yet) still revokes what it names', async () => {
    const h = harness();
    // The drain of p-a raised the epoch: reports on the bound of epoch 1 are refused until the snapshot of
    // the new epoch is applied and ACKed, and the refusal carries the drains under way.
    h.script('runtime', { ...refusal(409, 'stale_epoch'), revokeProxyIds: ['p-a'] });
    const picks = () => {
      const seen = new Set<string>();
      for (let i = 0; i < 20; i++) {
        const p = h.worker.pick('example.com', Date.now(), {
          stickyValue: () => undefined,
          stickyOwner: () => '',
        });
        if (p.kind === 'ok') seen.add(p.upstream.name);
      }
      return [...seen].sort();
    };
    await acked(h);
    expect(h.client.of('runtime')).toHaveLength(1);
    expect(h.worker.snapshot()?.upstreams.has('p-a')).toBe(true); // still in the applied snapshot
    expect(picks()).toEqual(['p-b']);
    // The next accepted answer is the whole set again: none, so p-a is usable (the drain was cancelled).
    await vi.advanceTimersByTimeAsync(5_000);
    expect(h.client.of('runtime')).toHaveLength(2);
    expect(picks()).toEqual(['p-a', 'p-b']);
  });

  it('a 403 on runtime reports (configuration) waits a jittered slow retry, not the report interval', async () => {
    const h = harness();
    for (let i = 0; i < 5; i++) h.script('runtime', refusal(403, 'forbidden'));
    await acked(h);
    expect(h.client.of('runtime')).toHaveLength(1);
    // random = 0 here: half of slowRetryMs (20 s), 10 s, where the report interval is 5 s
    await vi.advanceTimersByTimeAsync(9_000);
    expect(h.client.of('runtime')).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(2_000);
    expect(h.client.of('runtime')).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(8_000);
    expect(h.client.of('runtime')).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(3_000);
    expect(h.client.of('runtime')).toHaveLength(3);
  });

  it('a 429 with a Retry-After of a day silences runtime reports for the slow retry at most', async () => {
    const h = harness();
    h.script('runtime', refusal(429, 'rate_limited', 86_400_000));
    await acked(h);
    expect(h.client.of('runtime')).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(15_000);
    expect(h.client.of('runtime')).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(10_000); // slowRetryMs (20 s) past the refusal, reports resume
    expect(h.client.of('runtime').length).toBeGreaterThanOrEqual(2);
  });

  it.each([
    ['past what a timer holds (it would fire every 1 ms)', 2_147_484, 2_147_485, 2_147_486 * 2, 60_000],
    ['beyond the report TTL (each report would lapse before the next)', 40, 15, 120, 15_000],
    ['beyond half the session TTL (each session would lapse before the next report)', 5, 15, 5, 2_500],
  ])('a report interval %s is bounded', async (_l, seconds, ttl, sessionTtl, expectedMs) => {
    const h = harness();
    h.script('register', {
      ok: true,
      body: registration('session-1', {
        reportIntervalSeconds: seconds,
        reportTtlSeconds: ttl,
        sessionTtlSeconds: sessionTtl,
      }),
    });
    await acked(h);
    const first = h.client.of('runtime').length;
    await vi.advanceTimersByTimeAsync(expectedMs * 3);
    const times = h.client.of('runtime').map((c) => c.at);
    expect(times.length - first).toBe(3);
    expect(gaps(times.slice(first - 1)).every((g) => g <= expectedMs)).toBe(true);
  });

  it('no_ack / ack_bound_mismatch → ACK again, then report on it', async () => {
    const h = harness();
    h.script('runtime', refusal(409, 'ack_bound_mismatch'));
    await acked(h);
    expect(h.client.calls.map((c) => c.method)).toEqual(['register', 'ack', 'runtime', 'ack', 'runtime']);
    expect(h.client.of('runtime').map(sequenceOf)).toEqual([
      ['session-1', 1],
      ['session-1', 2],
    ]);
  });

  it('a lost session → register again; sequences start over under the new session', async () => {
    const h = harness();
    h.script('runtime', refusal(409, 'session_expired'));
    await acked(h);
    await vi.advanceTimersByTimeAsync(5_000);
    expect(h.client.calls.map((c) => c.method)).toEqual([
      'register',
      'ack',
      'runtime',
      'register',
      'ack',
      'runtime',
      'runtime',
    ]);
    expect(h.client.of('runtime').map(sequenceOf)).toEqual([
      ['session-1', 1],
      ['session-2', 1],
      ['session-2', 2],
    ]);
  });

  it('sessions lost as soon as they are granted (a second process with this worker id) re-register only after a growing backoff', async () => {
    const h = harness();
    // Every session is superseded before its first report lands: six times, then the other process is gone.
    h.script('runtime', ...Array.from({ length: 6 }, () => refusal(409, 'stale_session')));
    await acked(h);
    await vi.advanceTimersByTimeAsync(20_000);
    const at = h.client.of('register').map((c) => c.at);
    expect(at).toHaveLength(7);
    // The first loss is a blip (registered again at once); from the second, backoff (random = 0: half a step).
    expect(gaps(at)).toEqual([0, 250, 500, 1_000, 2_000, 4_000]);
    const churn = h.lines.filter((l) => l.event === 'gateway.session_churn');
    expect(churn.map((l) => l.lostInARow)).toEqual([2, 3, 4, 5, 6]);
    expect(churn[0]).toMatchObject({ severity: 'ERROR', retryInMs: 250 });
    expect(String(churn[0]!.message)).toContain('GATEWAY_WORKER_ID');
    // The last session stuck: it reports on as usual.
    expect(h.client.of('runtime').at(-1)!.body).toMatchObject({ sessionId: 'session-7' });
  });

  it('outcome batches are retried under the same sequence until accepted; 413 splits them', async () => {
    const h = harness();
    await acked(h);
    for (let i = 0; i < 4; i++) h.worker.recordOutcome(outcome(i));
    h.script('outcomes', refusal(503, 'unavailable'), refusal(413, 'payload_too_large'));
    await vi.advanceTimersByTimeAsync(10_000);
    const batches = h.client.of('outcomes').map((c) => c.body as { sequence: number; outcomes: unknown[] });
    expect(batches.map((b) => [b.sequence, b.outcomes.length])).toEqual([
      [1, 4],
      [1, 4],
      [2, 2],
      [3, 2],
    ]);
    expect(batches[2]!.outcomes[0]).toEqual({
      proxy: 'p-a',
      stage: 'TUNNEL',
      ok: true,
      latencyMs: 0,
      target: 'example.com:443',
      at: new Date(T0).toISOString(),
    });
  });

  it('runtime reports refused 503, 401 or unanswered are retried on a jittered backoff, never later than the interval', async () => {
    // A report is the heartbeat the controller counts the worker's capacity by for reportTtlSeconds (15 s
    // here): a failed round is tried again sooner than the interval, backing off up to it and no further.
    const h = harness();
    h.script(
      'runtime',
      { ok: true, body: { acceptedSequence: 1, replay: false, revokeProxyIds: [], reportTtlSeconds: 15 } },
      refusal(503, 'unavailable'),
      refusal(0),
      refusal(401, 'unauthenticated'),
      refusal(503),
      refusal(503, 'contended'),
      ...Array.from({ length: 6 }, () => refusal(0)),
    );
    await acked(h);
    await vi.advanceTimersByTimeAsync(40_000);
    const runtime = h.client.of('runtime');
    const g = gaps(runtime.map((c) => c.at));
    // random = 0: half of each step (0.5 s doubling, capped at the 5 s interval): 250, 500, 1000, 2000,
    // then 2500 each — and once accepted, the interval again.
    expect(g).toEqual([
      5_000, 250, 500, 1_000, 2_000, 2_500, 2_500, 2_500, 2_500, 2_500, 2_500, 2_500,
      // accepted 26.25 s in: the interval's ticks again (30, 35, 40 s)
      3_750, 5_000, 5_000,
    ]);
    // Each retry is a new report (its counts as they are then), under the next sequence.
    const seq = runtime.map((c) => (c.body as { reportSequence: number }).reportSequence);
    expect(seq).toEqual(seq.map((_, i) => i + 1));
  });

  it('the runtime backoff is jittered within [half, all] of its step, and its cap is the report interval', async () => {
    const h = harness({ random: 0.999 });
    h.script(
      'runtime',
      { ok: true, body: { acceptedSequence: 1, replay: false, revokeProxyIds: [], reportTtlSeconds: 15 } },
      ...Array.from({ length: 8 }, () => refusal(503, 'unavailable')),
    );
    await acked(h);
    await vi.advanceTimersByTimeAsync(35_000);
    const g = gaps(h.client.of('runtime').map((c) => c.at));
    // Nearly all of each step: 500, 1000, 2000, 4000, then the 5 s interval's — never past it.
    expect(g).toEqual([5_000, 500, 1_000, 1_999, 3_998, 4_998, 4_998, 4_998, 4_998, 2_511]);
  });

  it('outcome rounds refused 503 or unanswered back off (the session backoff, jittered) instead of the fixed interval', async () => {
    const h = harness();
    await acked(h);
    h.worker.recordOutcome({ ...outcome(1), at: Date.now() });
    h.script('outcomes', refusal(503, 'unavailable'), refusal(0), refusal(401), refusal(503), refusal(503));
    await vi.advanceTimersByTimeAsync(30_000);
    const calls = h.client.of('outcomes');
    // random = 0: half of each step of 0.5 s doubling to 8 s (this harness's backoff): 250, 500, 1000, 2000, 4000.
    expect(gaps(calls.map((c) => c.at))).toEqual([250, 500, 1_000, 2_000, 4_000]);
    expect(calls.map((c) => (c.body as { sequence: number }).sequence)).toEqual([1, 1, 1, 1, 1, 1]);
  });

  /** The API away (503) until `untilMs` past T0, after the scripted answers. */
  const awayUntil = (h: ReturnType<typeof harness>, untilMs: number) => {
    const answer = h.client.defaults.outcomes as (body: unknown) => unknown;
    h.client.defaults.outcomes = ((body: unknown) =>
      Date.now() < T0 + untilMs ? refusal(503, 'unavailable') : answer(body)) as unknown as Script;
  };

  /** Records outcome(1), outcome(2), … at these times (ms from now, ascending), the clock moving between. */
  const recordAt = async (h: ReturnType<typeof harness>, times: number[]) => {
    let now = 0;
    for (const [i, t] of times.entries()) {
      if (t > now) await vi.advanceTimersByTimeAsync(t - now);
      now = t;
      h.worker.recordOutcome(outcome(i + 1));
    }
  };

  it('an outcome batch that outlives the age bound is dropped unsent (counted, logged once); the next goes under the next sequence', async () => {
    // The API stamps a batch with the time it stores it: outcomes held through an outage would reach the
    // probe's passive track as fresh evidence. Past max(60 s, 3 report intervals) they are dropped.
    const h = harness();
    await acked(h);
    awayUntil(h, 80_000); // the API is away for 80 s
    h.worker.recordOutcome({ ...outcome(1), at: Date.now() });
    h.worker.recordOutcome({ ...outcome(2), at: Date.now() });
    await vi.advanceTimersByTimeAsync(30_000);
    // Observed during the outage, 30 s in: still fresh enough when the API comes back.
    h.worker.recordOutcome({ ...outcome(3), at: Date.now() });
    await vi.advanceTimersByTimeAsync(90_000);
    const calls = h.client.of('outcomes').map((c) => ({
      at: c.at,
      ...(c.body as { sequence: number; outcomes: Array<{ latencyMs: number; at: string }> }),
    }));
    // Nothing observed more than 60 s before a call goes out with it.
    for (const c of calls)
      for (const o of c.outcomes) expect(c.at - Date.parse(o.at)).toBeLessThanOrEqual(60_000);
    // The first batch never got through: dropped once 60 s old; the next batch under the next sequence.
    const accepted = calls.filter((c) => c.at >= T0 + 80_000);
    expect(accepted.map((c) => [c.sequence, c.outcomes.map((o) => o.latencyMs)])).toEqual([[2, [3]]]);
    expect(h.worker.expiredOutcomes).toBe(2);
    const logged = h.lines.filter((l) => l.event === 'gateway.outcomes_expired');
    expect(logged).toHaveLength(1);
    expect(logged[0]).toMatchObject({ severity: 'WARNING', outcomes: 2, batches: 1, maxAgeMs: 60_000 });
  });

  describe('the outcome age bound is read on the monotonic clocks, not from `at` (a wall-clock step)', () => {
    // The worker's monotonic clock and the session's, each of its own origin (never compared), and one
    // wall clock both read, which the test steps.
    const clocks = () => {
      const c = { stepMs: 0 };
      const wall = () => Date.now() + c.stepMs;
      const h = harness({
        now: wall,
        monotonicNow: () => Date.now() - T0 + 7_000_000,
        workerClocks: { now: wall, monotonicNow: () => Date.now() - T0 + 42 },
      });
      return { h, c, wall };
    };
    const sent = (h: ReturnType<typeof harness>) =>
      h.client
        .of('outcomes')
        .map((c) => (c.body as { outcomes: Array<{ latencyMs: number; at: string }> }).outcomes);

    it('stepped back an hour during an outage: outcomes held past the bound are dropped (counted), not sent an hour younger', async () => {
      const { h, c, wall } = clocks();
      await acked(h);
      awayUntil(h, 80_000);
      h.worker.recordOutcome({ ...outcome(1), at: wall() });
      await vi.advanceTimersByTimeAsync(10_000);
      c.stepMs = -3_600_000; // NTP steps the wall clock back an hour
      await vi.advanceTimersByTimeAsync(110_000);
      const accepted = h.client.of('outcomes').filter((call) => call.at >= T0 + 80_000);
      expect(accepted).toEqual([]);
      expect(h.worker.expiredOutcomes).toBe(1);
      expect(h.lines.filter((l) => l.event === 'gateway.outcomes_expired')).toEqual([
        expect.objectContaining({ outcomes: 1, batches: 1, maxAgeMs: 60_000 }),
      ]);
    });

    it('stepped forward an hour: an outcome seen a moment ago is sent, its `at` as the wall clock read it', async () => {
      const { h, c, wall } = clocks();
      await acked(h);
      const at = wall();
      h.worker.recordOutcome({ ...outcome(1), at });
      c.stepMs = 3_600_000; // NTP steps the wall clock forward an hour
      await vi.advanceTimersByTimeAsync(5_000);
      expect(sent(h)).toEqual([[expect.objectContaining({ latencyMs: 1, at: new Date(at).toISOString() })]]);
      expect(h.worker.expiredOutcomes).toBe(0);
    });

    const calls = (h: ReturnType<typeof harness>) =>
      h.client.of('outcomes').map((c) => {
        const b = c.body as { sequence: number; outcomes: Array<{ latencyMs: number }> };
        return [c.at - T0, b.sequence, b.outcomes.map((o) => o.latencyMs)];
      });

    it('each outcome keeps its own time through a 413 split and a partial expiry', async () => {
      const { h } = clocks();
      await acked(h);
      h.script('outcomes', refusal(413, 'payload_too_large'));
      awayUntil(h, 63_000);
      await recordAt(h, [0, 300, 600, 4_800]); // 4 at 4.8 s; the tick at 5 s takes all four
      await vi.advanceTimersByTimeAsync(61_000 - 4_800);
      const early = calls(h);
      // Taken at 5 s as one batch, refused 413: split into [1, 2] and [3, 4]; [1, 2] retried on the backoff.
      expect(early.slice(0, 3)).toEqual([
        [5_000, 1, [1, 2, 3, 4]],
        [5_000, 2, [1, 2]],
        [5_250, 2, [1, 2]],
      ]);
      expect(early.slice(2, -1).every(([, seq, o]) => seq === 2 && `${o}` === '1,2')).toBe(true);
      // 60.75 s: 1, 2 (its whole batch) and 3 are past the bound (seen 0, 0.3, 0.6 s); 4 (4.8 s) is not, and
      // goes alone under the next sequence.
      expect(early.at(-1)).toEqual([60_750, 3, [4]]);
      expect(h.worker.expiredOutcomes).toBe(3);
      // Its retry at 64.75 s, the API back, takes it: 4 is 59.95 s old then.
      await vi.advanceTimersByTimeAsync(5_000);
      expect(calls(h).slice(early.length)).toEqual([[64_750, 3, [4]]]);
      expect(h.worker.expiredOutcomes).toBe(3);
    });

    it('a batch expired in part twice drops each outcome at its own age', async () => {
      const { h } = clocks();
      await acked(h);
      awayUntil(h, 63_000);
      await recordAt(h, [0, 2_000, 4_800]); // 3 at 4.8 s; the tick at 5 s takes all three
      await vi.advanceTimersByTimeAsync(70_000 - 4_800);
      const c = calls(h);
      // 60.75 s: 1 (seen at 0) goes; 64.75 s: 2 (2 s) goes, 3 (4.8 s) is sent, all under the batch's sequence.
      expect(c.filter(([at]) => (at as number) >= 60_000)).toEqual([
        [60_750, 1, [2, 3]],
        [64_750, 1, [3]],
      ]);
      expect(h.worker.expiredOutcomes).toBe(2);
    });
  });

  it('a slow outcome upload never holds up the runtime reports, nor the draining and final ones', async () => {
    // Outcome calls answered after 9 s each (the API retrying Firestore), outcomes arriving all along:
    // runtime reports still go at the interval — past reportTtlSeconds (15 s) the controller would stop
    // counting this worker's capacity, past the session TTL drop the session.
    const h = harness();
    await acked(h);
    const answer = h.client.defaults.outcomes as (body: unknown) => unknown;
    h.client.defaults.outcomes = ((body: unknown) =>
      new Promise((r) => setTimeout(() => r(answer(body)), 9_000))) as unknown as Script;
    for (let i = 0; i < 40; i++) {
      h.worker.recordOutcome(outcome(i));
      await vi.advanceTimersByTimeAsync(1_000);
    }
    expect(h.client.of('outcomes').length).toBeGreaterThanOrEqual(4);
    const runtimeAt = h.client.of('runtime').map((c) => c.at);
    expect(runtimeAt.length).toBeGreaterThanOrEqual(8);
    expect(Math.max(...gaps(runtimeAt))).toBeLessThanOrEqual(5_000);
    // Shutdown with an upload under way: the draining report at once, the final one within its bound.
    const draining = () => h.client.of('runtime').filter((c) => (c.body as { draining: boolean }).draining);
    await h.session.source.stop();
    await flush();
    expect(draining()).toHaveLength(1);
    let finished = false;
    void h.session.reporter.stop().then(() => {
      finished = true;
    });
    await flush();
    expect(draining()).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(2_000);
    expect(finished).toBe(true);
  });

  it('shutdown is bounded when the pull does not close: the draining report still goes at once', async () => {
    // @google-cloud/pubsub's close() waits for its ack flush, up to maxExtensionTime (60 min) by default:
    // with Pub/Sub out of reach, SIGTERM must still report draining and end within Cloud Run's 10 s.
    const h = harness();
    await acked(h);
    h.feed.hangOnClose = true;
    const draining = () => h.client.of('runtime').map((c) => (c.body as { draining: boolean }).draining);
    let stopped = false;
    void h.session.source.stop().then(() => {
      stopped = true;
    });
    await flush();
    expect(draining()).toEqual([false, true]);
    expect(stopped).toBe(true); // the drain is not held up either
    let finished = false;
    void h.session.reporter.stop().then(() => {
      finished = true;
    });
    await flush();
    expect(draining()).toEqual([false, true, true]); // the final report goes before the close is waited for
    await vi.advanceTimersByTimeAsync(1_000);
    expect(finished).toBe(true);
  });

  it('shutdown within the slow retry of a 403 still sends the draining and the final report', async () => {
    const h = harness();
    h.script('runtime', refusal(403, 'forbidden'));
    await acked(h);
    const draining = () => h.client.of('runtime').map((c) => (c.body as { draining: boolean }).draining);
    expect(draining()).toEqual([false]); // refused: quiet for the slow retry
    await h.session.source.stop();
    await flush();
    await h.session.reporter.stop();
    expect(draining()).toEqual([false, true, true]);
  });

  it('shutdown: the pull stops, a draining report goes at once, and a last one after the drain', async () => {
    const h = harness();
    await acked(h);
    await h.session.source.stop();
    await flush();
    expect(h.feed.closed).toBe(1);
    const draining = () => h.client.of('runtime').map((c) => (c.body as { draining: boolean }).draining);
    expect(draining()).toEqual([false, true]);
    await h.session.reporter.stop();
    expect(draining()).toEqual([false, true, true]);
    await vi.advanceTimersByTimeAsync(60_000);
    expect(draining()).toHaveLength(3);
    expect(h.client.of('register')).toHaveLength(1);
  });

  it('a session that lapses while draining is kept: the last word goes on it, and nothing registers again', async () => {
    // The controller takes a draining, idle report on the worker's current session even past its TTL and
    // hands its proxies over at once (docs/gateway-control-plane.md § Runtime report). A drain that outlives
    // the session (a long GATEWAY_DRAIN_TIMEOUT_MS) is refused session_expired on the way; dropping the
    // session then — registration does not run while draining — left the last word unsent, and the proxies
    // idle until the grant lapsed.
    const h = harness();
    await acked(h);
    h.script('runtime', refusal(409, 'session_expired'));
    await h.session.source.stop();
    await flush();
    await h.session.reporter.stop();
    const runtime = h.client.of('runtime').map((c) => c.body as { sessionId: string; draining: boolean });
    expect(runtime.map((b) => [b.sessionId, b.draining])).toEqual([
      ['session-1', false],
      ['session-1', true],
      ['session-1', true],
    ]);
    expect(h.client.of('register')).toHaveLength(1);
  });
});

/** start() as startGateway calls it with its `stopping` signal; the answer says whether it has ended. */
async function starting(h: ReturnType<typeof harness>, stopping = new AbortController()) {
  let done = false;
  void h.session.source.start(h.worker, stopping.signal).then(() => {
    done = true;
  });
  await flush();
  return () => done;
}

// A new session is given proxies only once it has ACKed a snapshot (plan-pass.ts assignable): its first
// snapshot is empty. The start wait ended on it, and the listeners opened (Cloud Run routing traffic) to
// 503 no_upstream until the next.
describe('the start wait', () => {
  it('ACKs an empty first snapshot at once but goes on waiting; the next version ends it', async () => {
    const h = harness({ settings: { startWaitMs: 15_000 } });
    h.script('register', { ok: true, body: registration('session-1') });
    const started = await starting(h);
    await h.feed.deliver(feedMessage(snapshot(1, [])));
    await flush();
    expect(h.client.of('ack').map((c) => (c.body as { version: number }).version)).toEqual([1]);
    expect(started()).toBe(false);
    await h.feed.deliver(feedMessage(snapshot(2, ['p-a'])));
    await flush();
    expect(started()).toBe(true);
    await h.session.source.stop();
    await h.session.reporter.stop();
  });

  it('ends on a first snapshot that holds proxies, and runs out on empty ones alone', async () => {
    const withProxies = harness({ settings: { startWaitMs: 15_000 } });
    withProxies.script('register', { ok: true, body: registration('session-1') });
    const started = await starting(withProxies);
    await withProxies.feed.deliver(feedMessage(snapshot(1, ['p-a'])));
    await flush();
    expect(started()).toBe(true);
    await withProxies.session.source.stop();
    await withProxies.session.reporter.stop();

    const empty = harness({ settings: { startWaitMs: 15_000 } });
    empty.script('register', { ok: true, body: registration('session-1') });
    const emptyStarted = await starting(empty);
    await empty.feed.deliver(feedMessage(snapshot(1, [])));
    await vi.advanceTimersByTimeAsync(14_000);
    expect(emptyStarted()).toBe(false);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(emptyStarted()).toBe(true);
    await empty.session.source.stop();
    await empty.session.reporter.stop();
  });
});

// SIGTERM during start-up (docs/gateway.md § Shutdown): Cloud Run scales in or replaces an instance that
// has registered but has no snapshot yet. startGateway passes its `stopping` signal to start(), then
// stops the source and the reporter as shutdown() does.
describe('shutdown during start-up', () => {
  /** The aborted start's remainder in startGateway: reporter started, source stopped, reporter stopped. */
  async function stopStarted(h: ReturnType<typeof harness>) {
    h.session.reporter.start(h.worker);
    await h.session.source.stop();
    await h.session.reporter.stop();
  }
  const runtime = (h: ReturnType<typeof harness>) =>
    h.client.of('runtime').map((c) => c.body as Record<string, unknown>);

  it('in the start wait (registered, no snapshot): start() ends at once and the draining report goes, on no snapshot', async () => {
    const h = harness({ settings: { startWaitMs: 15_000 } });
    h.script('register', { ok: true, body: registration('session-1', { ownershipEpoch: 17 }) });
    const stopping = new AbortController();
    const started = await starting(h, stopping);
    await vi.advanceTimersByTimeAsync(5_000);
    expect(started()).toBe(false);
    expect(h.client.of('runtime')).toHaveLength(0); // no report before an ACK while running
    stopping.abort();
    await flush();
    expect(started()).toBe(true);
    expect(
      h.lines.some((l) => l.message === 'no snapshot yet: serving 503 no_snapshot until one arrives'),
    ).toBe(false);
    let stopped = false;
    const stoppedAll = stopStarted(h).then(() => {
      stopped = true;
    });
    await flush();
    expect(stopped).toBe(true); // nothing to wait for (no timer advanced): the report was answered
    await stoppedAll;
    // The one report the API takes before any ACK (shared/src/domain/workers/runtime-report.ts): draining,
    // all zero, version 0, the epoch the registration named; the first sequence of the session.
    expect(runtime(h)[0]).toMatchObject({
      sessionId: 'session-1',
      reportSequence: 1,
      snapshotVersion: 0,
      epoch: 17,
      draining: true,
      counts: [],
    });
    expect(runtime(h).every((b) => b.draining === true && b.snapshotVersion === 0)).toBe(true);
    expect(h.feed.open_).toBe(false);
    const calls = h.client.calls.length;
    await vi.advanceTimersByTimeAsync(60_000);
    expect(h.client.calls.length).toBe(calls); // stopped: no more registration, fetch or report
    expect(h.client.of('register')).toHaveLength(1);
  });

  it('with the register call in flight: waits for its answer, takes no pull, and reports draining on that session', async () => {
    const h = harness({ settings: { startWaitMs: 15_000 } });
    const answer = held(h);
    const stopping = new AbortController();
    await starting(h, stopping);
    stopping.abort();
    let stopped = false;
    void stopStarted(h).then(() => {
      stopped = true;
    });
    await vi.advanceTimersByTimeAsync(1_500);
    expect(stopped).toBe(false);
    answer({ ok: true, body: registration('session-1') });
    await flush();
    expect(stopped).toBe(true);
    expect(h.feed.opened).toEqual([]); // granted after shutdown began: no pull
    expect(runtime(h).length).toBeGreaterThan(0);
    for (const b of runtime(h))
      expect(b).toMatchObject({ sessionId: 'session-1', snapshotVersion: 0, draining: true, counts: [] });
    expect(runtime(h).map((b) => b.reportSequence)).toEqual(runtime(h).map((_b, i) => i + 1));
    await vi.advanceTimersByTimeAsync(60_000);
    expect(h.client.of('register')).toHaveLength(1);
    expect(h.client.of('latestSnapshot')).toHaveLength(0);
  });

  it('with the register call never answered: waits for it at most shutdownRegisterWaitMs, then goes on', async () => {
    const h = harness({ settings: { startWaitMs: 15_000, shutdownRegisterWaitMs: 4_000 } });
    h.script('register', (() => new Promise(() => {})) as unknown as Script);
    const stopping = new AbortController();
    await starting(h, stopping);
    await vi.advanceTimersByTimeAsync(1_000);
    stopping.abort();
    let stopped = false;
    void stopStarted(h).then(() => {
      stopped = true;
    });
    await vi.advanceTimersByTimeAsync(3_999);
    expect(stopped).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(stopped).toBe(true);
    expect(h.client.of('runtime')).toHaveLength(0);
    expect(
      h.lines.some(
        (l) => l.message === 'register call still unanswered at shutdown: going on without its session',
      ),
    ).toBe(true);
  });

  it('the wait for a register call runs from when shutdown began, alongside the drain', async () => {
    const h = harness({ settings: { shutdownRegisterWaitMs: 4_000 } });
    await h.start();
    await h.feed.deliver(feedMessage(snapshot(1, ['p-a'])));
    await flush();
    // The session is lost; registering again hangs (the API is away).
    h.script('runtime', refusal(409, 'stale_session'));
    h.script('register', (() => new Promise(() => {})) as unknown as Script);
    await vi.advanceTimersByTimeAsync(5_000);
    expect(h.session.session).toBeNull();
    await h.session.source.stop();
    await vi.advanceTimersByTimeAsync(6_500); // the drain bound
    let stopped = false;
    void h.session.reporter.stop().then(() => {
      stopped = true;
    });
    await flush();
    expect(stopped).toBe(true);
  });

  it('the wait for a register call counts from the signal, not from the source stop that follows the look-up wait', async () => {
    // startGateway's shutdown waits (up to the drain bound) for requests still in their DNS look-up before
    // it stops the source: the register call is waited for until 4 s after SIGTERM, not 4 s after that.
    const h = harness({ settings: { shutdownRegisterWaitMs: 4_000 } });
    const stopping = new AbortController();
    await starting(h, stopping);
    h.session.reporter.start(h.worker);
    await h.feed.deliver(feedMessage(snapshot(1, ['p-a'])));
    await flush();
    h.script('runtime', refusal(409, 'stale_session'));
    h.script('register', (() => new Promise(() => {})) as unknown as Script);
    await vi.advanceTimersByTimeAsync(5_000);
    expect(h.session.session).toBeNull();
    stopping.abort(); // SIGTERM
    await vi.advanceTimersByTimeAsync(3_000); // a look-up still under way
    await h.session.source.stop();
    await vi.advanceTimersByTimeAsync(3_500); // the rest of the drain: 6.5 s after the signal
    let stopped = false;
    void h.session.reporter.stop().then(() => {
      stopped = true;
    });
    await flush();
    expect(stopped).toBe(true);
  });

  it('before registration: no register call at all', async () => {
    const h = harness();
    const stopping = new AbortController();
    stopping.abort();
    await h.session.source.start(h.worker, stopping.signal);
    await stopStarted(h);
    await vi.advanceTimersByTimeAsync(60_000);
    expect(h.client.calls).toEqual([]);
  });

  it('busy before any ACK (a snapshot applied, its ACK not yet accepted): ACKs first, then reports on the bound', async () => {
    const h = harness();
    h.script('ack', refusal(503, 'unavailable'));
    await h.start();
    await h.feed.deliver(feedMessage(snapshot(1, ['p-a'])));
    await flush();
    expect(h.session.ackBound).toBeNull();
    const p = h.worker.pick('example.com', Date.now(), {
      stickyValue: () => undefined,
      stickyOwner: () => '',
    });
    if (p.kind !== 'ok') throw new Error('no pick');
    p.upstream.live.active++; // a tunnel runs on it
    expect(h.worker.runtimeCounts()).not.toEqual([]);
    await h.session.source.stop();
    await vi.advanceTimersByTimeAsync(1_000);
    // No version-0 report while a tunnel runs (the API would refuse it): the ACK, then reports on it.
    expect(runtime(h).every((b) => b.snapshotVersion === 1)).toBe(true);
    expect(runtime(h).at(-1)).toMatchObject({ snapshotVersion: 1, draining: true });
    await h.session.reporter.stop();
  });
});
