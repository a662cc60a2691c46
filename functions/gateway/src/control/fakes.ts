// Fakes for the session's unit tests: a control client answering from scripts (and recording every call
// with the fake clock's time), and a feed the test delivers messages through.
import { buildSnapshot } from '../../../../shared/src/domain/gateway/canonical.js';
import {
  type GatewayProxy,
  type GatewaySnapshot,
  type GatewaySnapshotMessage,
  sha256Hex,
} from '../../../../shared/src/messages/gateway-snapshot.js';
import { type RegisterResponseBody, WORKER_LIMITS } from '../../../../shared/src/messages/worker-api.js';
import { type GatewayClocks, gatewayClocks } from '../../../../test/support/gateway-clocks.js';
import { CredentialCache, StaticCredentialResolver } from '../credentials.js';
import type { Logger } from '../logger.js';
import { GatewayWorker } from '../worker.js';
import type { ControlAnswer, ControlClient } from './client.js';
import type { FeedHandle, FeedMessage, FeedVerdict, SnapshotFeed } from './feed.js';
import { ControllerSession, type SessionDeps } from './session.js';

export type Method = 'register' | 'ack' | 'runtime' | 'outcomes' | 'latestSnapshot';
export type Refusal = Extract<ControlAnswer<unknown>, { ok: false }>;
export type Script = ControlAnswer<unknown> | ((body: unknown) => ControlAnswer<unknown>);

export const refusal = (status: number, code?: string, retryAfterMs?: number): Refusal => ({
  ok: false,
  status,
  code,
  message: code ?? `HTTP ${status}`,
  ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
});

export const T0 = Date.UTC(2026, 0, 1);

/**
 * A session of worker WORKER (instance-1, zone local, no jitter, a microtask between snapshot slices), on
 * the fake timers' Date.now for both its clocks unless the test passes its own.
 */
export function testSession(
  deps: Pick<SessionDeps, 'client' | 'feed' | 'log'> & Partial<SessionDeps>,
): ControllerSession {
  return new ControllerSession({
    workerId: WORKER,
    instanceId: 'instance-1',
    zone: 'local',
    ...gatewayClocks(() => Date.now()),
    random: () => 0,
    pause: () => Promise.resolve(),
    ...deps,
  });
}

/**
 * A worker for the session's tests: static credentials, no staleness limit, Date.now (the fake clock's) for
 * both its clocks unless a test passes two apart; between two slices of a snapshot a microtask, which the
 * fake clock's flush runs (a setImmediate it would not).
 */
export function testWorker(
  log: Logger,
  clocks: GatewayClocks = gatewayClocks(() => Date.now()),
): GatewayWorker {
  return new GatewayWorker({
    credentials: new CredentialCache(new StaticCredentialResolver(), 60_000, () => Date.now()),
    log,
    ...clocks,
    maxStaleAgeMs: Number.POSITIVE_INFINITY,
    workerId: WORKER,
    stickyTableSize: 10,
    outcomeQueueSize: 100,
    pause: () => Promise.resolve(),
  });
}
export const WORKER = 'gw-1';
export const SUBSCRIPTION = 'projects/demo/subscriptions/gateway-snapshots--worker-gw-1';

export function registration(
  sessionId: string,
  over: Partial<RegisterResponseBody> = {},
): RegisterResponseBody {
  return {
    protocolVersion: 1,
    sessionId,
    resumed: false,
    ownershipEpoch: 1,
    maxStaleAgeSeconds: 150,
    snapshotSubscription: SUBSCRIPTION,
    reportIntervalSeconds: 5,
    reportTtlSeconds: 15,
    sessionTtlSeconds: 30,
    limits: { ...WORKER_LIMITS },
    ...over,
  };
}

export const proxy = (name: string, capacity = 2): GatewayProxy => ({
  name,
  host: '127.0.0.1',
  port: 3128,
  protocol: 'http',
  capacity,
  expiresAt: new Date(T0 + 3_600_000).toISOString(),
  usableUntil: new Date(T0 + 3_000_000).toISOString(),
  attributes: {},
});

export const snapshot = (version: number, names: string[], epoch = 1, workerId = WORKER): GatewaySnapshot =>
  buildSnapshot(
    {
      schemaVersion: 1,
      version,
      ownershipEpoch: epoch,
      workerId,
      generatedAt: new Date(T0).toISOString(),
      validUntil: new Date(T0 + 3_600_000).toISOString(),
      routing: [{ name: 'all', match: { hosts: ['*'] }, selector: {}, policy: 'least-active' }],
      proxies: names.map((n) => proxy(n)),
    },
    sha256Hex,
  );

export function feedMessage(
  m: GatewaySnapshotMessage | string,
  attributes: Record<string, string> = {},
): FeedMessage {
  const data = Buffer.from(typeof m === 'string' ? m : JSON.stringify(m));
  const attrs: Record<string, string> =
    typeof m === 'string'
      ? { workerId: WORKER }
      : {
          workerId: m.workerId,
          kind: m.kind,
          version: String(m.version),
          checksum: m.checksum,
        };
  return { id: `m-${Math.random().toString(36).slice(2)}`, attributes: { ...attrs, ...attributes }, data };
}

export class FakeClient implements ControlClient {
  readonly calls: Array<{ method: Method; at: number; body: unknown }> = [];
  readonly scripts: Record<Method, Script[]> = {
    register: [],
    ack: [],
    runtime: [],
    outcomes: [],
    latestSnapshot: [],
  };
  /** Answers once a method's script is used up. */
  readonly defaults: Record<Method, Script>;
  private sessions = 0;

  constructor() {
    this.defaults = {
      // As the API answers: the version offered (it refuses the ones it does not speak).
      register: (body) => ({
        ok: true,
        body: registration(`session-${++this.sessions}`, {
          protocolVersion: (body as { supportedProtocolVersion: number }).supportedProtocolVersion,
        }),
      }),
      ack: (body) => {
        const b = body as { version: number; epoch: number };
        return { ok: true, body: { acceptedVersion: b.version, acceptedEpoch: b.epoch, unchanged: false } };
      },
      runtime: (body) => ({
        ok: true,
        body: {
          acceptedSequence: (body as { reportSequence: number }).reportSequence,
          replay: false,
          revokeProxyIds: [],
          reportTtlSeconds: 15,
        },
      }),
      outcomes: (body) => {
        const b = body as { sequence: number; outcomes: unknown[] };
        return {
          ok: true,
          body: { acceptedSequence: b.sequence, duplicate: false, recorded: b.outcomes.length, ignored: 0 },
        };
      },
      latestSnapshot: refusal(404, 'no_snapshot'),
    };
  }

  of(method: Method) {
    return this.calls.filter((c) => c.method === method);
  }

  private answer(method: Method, body: unknown): Promise<ControlAnswer<never>> {
    this.calls.push({ method, at: Date.now(), body });
    const script = this.scripts[method].shift() ?? this.defaults[method];
    const a = typeof script === 'function' ? script(body) : script;
    return Promise.resolve(a as ControlAnswer<never>);
  }

  register(body: unknown) {
    return this.answer('register', body);
  }
  ack(_w: string, body: unknown) {
    return this.answer('ack', body);
  }
  runtime(_w: string, body: unknown) {
    return this.answer('runtime', body);
  }
  outcomes(_w: string, body: unknown) {
    return this.answer('outcomes', body);
  }
  latestSnapshot(_w: string, sessionId: string) {
    return this.answer('latestSnapshot', { sessionId });
  }
}

export class FakeFeed implements SnapshotFeed {
  readonly opened: string[] = [];
  closed = 0;
  /** close() never settles (a Pub/Sub client flushing acks to a service it cannot reach). */
  hangOnClose = false;
  private handler: ((m: FeedMessage) => Promise<FeedVerdict>) | null = null;
  private onClosed: ((err: Error | undefined) => void) | null = null;

  open(
    subscription: string,
    handle: (m: FeedMessage) => Promise<FeedVerdict>,
    onClosed: (err: Error | undefined) => void,
  ): FeedHandle {
    this.opened.push(subscription);
    this.handler = handle;
    this.onClosed = onClosed;
    return {
      close: () => {
        this.closed++;
        this.handler = null;
        return this.hangOnClose ? new Promise<void>(() => {}) : Promise.resolve();
      },
    };
  }

  get open_(): boolean {
    return this.handler !== null;
  }

  deliver(m: FeedMessage): Promise<FeedVerdict> {
    if (!this.handler) throw new Error('the feed is not open');
    return this.handler(m);
  }

  /** The pull ends by itself (a non-retryable stream error). */
  end(err = new Error('NOT_FOUND')): void {
    const cb = this.onClosed;
    this.handler = null;
    this.onClosed = null;
    cb?.(err);
  }
}
