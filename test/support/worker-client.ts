// A test client that speaks the worker side of the gateway contract (docs/gateway-control-plane.md) over
// real sockets and the real Pub/Sub client: register → streaming pull of its subscription (dropping what
// is not addressed to it: the emulator does not filter) → validate and apply with the gateway's own code
// (decideSnapshot / applyDelta) → ACK → runtime reports with a strictly increasing sequence → outcomes.
// Tests set the counts it reports and read what it applied.
import { randomUUID } from 'node:crypto';
import { Firestore } from '@google-cloud/firestore';
import type { Message, PubSub, Subscription } from '@google-cloud/pubsub';
import { startApiServer } from '../../functions/api/src/server.js';
import { SnapshotJob } from '../../functions/snapshot/src/job-run.js';
import { FirestoreJobRunStore } from '../../shared/src/adapters/firestore/job-run-store.js';
import { FirestoreOwnershipStore } from '../../shared/src/adapters/firestore/ownership-store.js';
import { FirestoreProxyStore } from '../../shared/src/adapters/firestore/proxy-store.js';
import { FirestoreSnapshotStore } from '../../shared/src/adapters/firestore/snapshot-store.js';
import { type AppliedVersion, decideSnapshot } from '../../shared/src/domain/gateway/acceptance.js';
import { applyDelta } from '../../shared/src/domain/gateway/delta.js';
import { emptyStatus, ProxyResource } from '../../shared/src/domain/proxy.js';
import {
  type GatewaySnapshot,
  GatewaySnapshotMessage,
  sha256Hex,
} from '../../shared/src/messages/gateway-snapshot.js';
import { Tick } from '../../shared/src/messages/tick.js';
import type { RegisterResponseBody, RuntimeResponseBody } from '../../shared/src/messages/worker-api.js';
import { SNAPSHOT_REQUESTS_TOPIC } from '../../shared/src/messages/worker-snapshot-request.js';
import { HEALTHY_CONDITIONS } from '../../shared/src/testing/healthy-conditions.js';
import { workersApiDeps } from './admin-api.js';
import { startTestPlane } from './local-plane.js';
import { pollUntil } from './poll.js';
import { type PacedTicks, startPacedTicks } from './snapshot-ticker.js';

/** Tries of one applied snapshot's ACK (ackApplied): a transient refusal is tried again. */
const ACK_ATTEMPTS = 5;

export interface WorkerClientOptions {
  apiUrl: string;
  workerId: string;
  token: string;
  pubsub: PubSub;
  instanceId?: string;
  zone?: string;
  /** Register again (a new session) when a call says the session is gone, as a real worker does. Default true. */
  reregister?: boolean;
}

export interface Applied {
  snapshot: GatewaySnapshot;
  at: number;
  via: 'full' | 'delta' | 'fetch';
}

export interface HttpAnswer<T = Record<string, unknown>> {
  status: number;
  body: T;
}

export class WorkerClient {
  readonly workerId: string;
  instanceId: string;
  registration: RegisterResponseBody | null = null;
  current: GatewaySnapshot | null = null;
  readonly history: Applied[] = [];
  /** What the client ACKed and the controller accepted: runtime reports sit on it. */
  ackBound: { version: number; epoch: number } | null = null;
  counts: Array<{ proxy: string; active: number; reserved: number }> = [];
  draining = false;
  sequence = 0;
  lastRuntime: RuntimeResponseBody | null = null;
  /** Every runtime report the controller answered 200, with the counts it carried. */
  /** Reports the API accepted: when the answer came (`at`) and when the report was sent (`sentAt`). */
  readonly acceptedReports: Array<{ at: number; sentAt: number; counts: WorkerClient['counts'] }> = [];
  readonly refused: Array<{ status: number; error: string }> = [];
  private subscription: Subscription | null = null;
  private reporter: NodeJS.Timeout | null = null;
  /** The reporter's round under way (startReporting). */
  private reporting: Promise<void> | null = null;
  private outcomeSequence = 0;
  /** The ACKs of applied snapshots not answered yet: a report waits for them (see report). */
  private readonly acking = new Set<Promise<unknown>>();
  /** The ACK or report being sent: the next one waits for it (exclusive). */
  private controlCalls: Promise<unknown> = Promise.resolve();
  /** The snapshot messages being handled (a delta that does not apply fetches the latest first). */
  private readonly handling = new Set<Promise<void>>();

  constructor(private readonly o: WorkerClientOptions) {
    this.workerId = o.workerId;
    this.instanceId = o.instanceId ?? randomUUID();
  }

  get sessionId(): string {
    if (!this.registration) throw new Error(`${this.workerId} is not registered`);
    return this.registration.sessionId;
  }

  async call<T = Record<string, unknown>>(
    method: string,
    path: string,
    body?: unknown,
    token = this.o.token,
  ) {
    const res = await fetch(`${this.o.apiUrl}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as T } satisfies HttpAnswer<T>;
  }

  async register(supportedProtocolVersion = 1): Promise<HttpAnswer> {
    const r = await this.call('POST', '/v1/workers/register', {
      workerId: this.workerId,
      instanceId: this.instanceId,
      zone: this.o.zone ?? 'us-central1-a',
      supportedProtocolVersion,
    });
    if (r.status === 200) {
      const fresh = !this.registration || this.registration.sessionId !== r.body.sessionId;
      this.registration = r.body as unknown as RegisterResponseBody;
      if (fresh) {
        this.sequence = 0;
        this.outcomeSequence = 0;
        this.ackBound = null;
      }
    }
    return r;
  }

  /** Starts the streaming pull; every applied snapshot is ACKed at once. */
  startPull(): void {
    if (!this.registration) throw new Error('register first');
    this.subscription = this.o.pubsub.subscription(this.registration.snapshotSubscription, {
      flowControl: { maxMessages: 10 },
    });
    this.subscription.on('message', (m: Message) => {
      const handled: Promise<void> = this.onMessage(m).finally(() => this.handling.delete(handled));
      this.handling.add(handled);
    });
    this.subscription.on('error', () => {});
  }

  /**
   * Stops the pull, then waits for what it had received: the snapshots being applied and their ACKs. From
   * then on the ACK bound moves only by the test's own calls — a test naming it in raw reports reads it
   * after this (a snapshot ACKed mid-test, say a pass renewing grants under load, made them 409
   * ack_bound_mismatch).
   */
  async stopPull(): Promise<void> {
    const s = this.subscription;
    this.subscription = null;
    if (s) {
      s.removeAllListeners('message');
      await s.close();
    }
    // The reporter's round under way first (a session it found gone registers again and fetches the latest
    // snapshot, whose ACK settled() then waits for); with the reporter stopped, nothing of the client's own
    // goes on past this.
    await this.reporting;
    await this.settled();
  }

  /** Waits until no received snapshot is being applied and no ACK is out. */
  private async settled(): Promise<void> {
    while (this.handling.size > 0 || this.acking.size > 0) {
      await Promise.allSettled([...this.handling, ...this.acking]);
    }
  }

  private async onMessage(m: Message): Promise<void> {
    m.ack();
    if (m.attributes.workerId !== this.workerId) return; // the emulator does not apply filters
    const parsed = GatewaySnapshotMessage.safeParse(JSON.parse(m.data.toString('utf8')));
    if (!parsed.success || parsed.data.workerId !== this.workerId) return;
    const msg = parsed.data;
    if (msg.kind === 'full') {
      this.take(msg, 'full');
    } else if (this.current) {
      const r = applyDelta(this.current, msg, sha256Hex);
      if (r.ok) this.take(r.snapshot, 'delta');
      else await this.fetchLatest();
    } else {
      await this.fetchLatest();
    }
  }

  private applied(): AppliedVersion | null {
    const c = this.current;
    return c ? { version: c.version, ownershipEpoch: c.ownershipEpoch, checksum: c.checksum } : null;
  }

  private take(s: GatewaySnapshot, via: Applied['via']): void {
    const d = decideSnapshot(this.applied(), s, { workerId: this.workerId, sha256: sha256Hex });
    if (d.action !== 'apply') return;
    this.current = s;
    this.history.push({ snapshot: s, at: Date.now(), via });
    const acked: Promise<unknown> = this.ackApplied(s)
      .catch(() => {})
      .finally(() => this.acking.delete(acked));
    this.acking.add(acked);
  }

  /**
   * ACKs an applied snapshot, trying a 429 or 5xx again a few times as the gateway's ACK loop does: the
   * controller may have taken one it answered 503 (a write landing after the request's budget ran out),
   * and the client's bound, left behind, made every report on it 409 ack_bound_mismatch.
   */
  private async ackApplied(s: GatewaySnapshot): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      const r = await this.ack(s);
      const transient = r.status === 429 || r.status >= 500;
      if (!transient || attempt === ACK_ATTEMPTS || this.current !== s) return;
      await new Promise((resolve) => setTimeout(resolve, 200 * attempt));
    }
  }

  async fetchLatest(): Promise<HttpAnswer> {
    const r = await this.call('GET', `/v1/workers/${this.workerId}/snapshot?sessionId=${this.sessionId}`);
    if (r.status === 200) this.take(r.body as unknown as GatewaySnapshot, 'fetch');
    return r;
  }

  async ack(s: GatewaySnapshot | null = this.current): Promise<HttpAnswer> {
    if (!s) throw new Error('nothing to ACK');
    const r = await this.exclusive(async () => {
      const answer = await this.call('POST', `/v1/workers/${this.workerId}/ack`, {
        sessionId: this.sessionId,
        version: s.version,
        epoch: s.ownershipEpoch,
        checksum: s.checksum,
      });
      if (answer.status === 200 && (!this.ackBound || s.version >= this.ackBound.version)) {
        this.ackBound = { version: s.version, epoch: s.ownershipEpoch };
      }
      return answer;
    });
    if (r.status !== 200) await this.recover(r);
    return r;
  }

  /**
   * One runtime report on the ACK bound with the client's counts (a fresh sequence each time). It waits for
   * the snapshots being applied and their ACKs, so it names the newest bound; and it runs between ACKs,
   * never beside one (exclusive), so the bound it names is the controller's — an ACK the controller took
   * while a report was out made it 409 ack_bound_mismatch (under load).
   */
  async report(over: Record<string, unknown> = {}): Promise<HttpAnswer> {
    await this.settled();
    const r = await this.exclusive(async () => {
      const bound = this.ackBound;
      if (!bound) return { status: 0, body: { error: 'no_ack_yet' } };
      const counts = this.counts;
      const sentAt = Date.now();
      const answer = await this.call('POST', `/v1/workers/${this.workerId}/runtime`, {
        sessionId: this.sessionId,
        reportSequence: ++this.sequence,
        snapshotVersion: bound.version,
        epoch: bound.epoch,
        draining: this.draining,
        counts,
        ...over,
      });
      if (answer.status === 200) {
        this.lastRuntime = answer.body as unknown as RuntimeResponseBody;
        this.acceptedReports.push({
          at: Date.now(),
          sentAt,
          counts: (over.counts as typeof counts) ?? counts,
        });
      } else this.refused.push({ status: answer.status, error: String(answer.body.error) });
      return answer;
    });
    await this.recover(r);
    return r;
  }

  /** ACKs and reports one at a time, as the gateway runs them (functions/gateway/src/control/session.ts). */
  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.controlCalls.then(fn, fn);
    this.controlCalls = run.catch(() => {});
    return run;
  }

  private async recover(r: HttpAnswer): Promise<void> {
    const gone = ['unknown_worker', 'stale_session', 'session_expired'].includes(String(r.body.error));
    if (gone && this.o.reregister !== false && this.subscription) {
      await this.register();
      await this.fetchLatest();
    }
  }

  /**
   * Reports every `everyMs`, one round at a time as the gateway's reporter does: a tick while the last
   * report is still out is skipped (queued behind it, rounds could pile up under load and run on after
   * stopReporting).
   */
  startReporting(everyMs: number): void {
    this.stopReporting();
    this.reporter = setInterval(() => {
      if (this.reporting) return;
      const done = () => {
        this.reporting = null;
      };
      this.reporting = this.report().then(done, done);
    }, everyMs);
  }

  stopReporting(): void {
    if (this.reporter) clearInterval(this.reporter);
    this.reporter = null;
  }

  async outcomes(outcomes: unknown[], sequence = ++this.outcomeSequence): Promise<HttpAnswer> {
    return this.call('POST', `/v1/workers/${this.workerId}/outcomes`, {
      sessionId: this.sessionId,
      sequence,
      outcomes,
    });
  }

  /** Names usable in the applied snapshot at `at` (usableUntil not passed). */
  usableAt(at: number): Set<string> {
    return new Set(
      (this.current?.proxies ?? []).filter((p) => Date.parse(p.usableUntil) > at).map((p) => p.name),
    );
  }

  async stop(): Promise<void> {
    this.stopReporting();
    await this.stopPull();
  }
}

/**
 * Registers each worker client, starts its pull and its reports every `reportEveryMs`, and samples every
 * 50 ms the safety property: no proxy usable in two workers' applied snapshots at once (each offence goes
 * into `overlaps`). `stopWatching()` ends the sampling.
 */
export async function runWorkers(clients: readonly WorkerClient[], reportEveryMs: number) {
  for (const c of clients) {
    const r = await c.register();
    if (r.status !== 200) throw new Error(`register answered ${r.status}: ${JSON.stringify(r.body)}`);
    c.startPull();
    c.startReporting(reportEveryMs);
  }
  const overlaps: string[] = [];
  const watcher = setInterval(() => {
    const now = Date.now();
    const seen = new Set<string>();
    for (const c of clients)
      for (const p of c.usableAt(now)) {
        if (seen.has(p)) overlaps.push(p);
        seen.add(p);
      }
  }, 50);
  return { overlaps, stopWatching: () => clearInterval(watcher) };
}

/**
 * Polls `check` until it returns a value (not undefined, null or false) or `timeoutMs` passes (then
 * throws). Null is no value: a check ending `&& w.lastRuntime` (null until a report is accepted) must wait
 * for the report, not pass at once.
 */
export async function eventually<T>(
  check: () => T | undefined | null | false | Promise<T | undefined | null | false>,
  timeoutMs: number,
  what: string,
  everyMs = 100,
): Promise<T> {
  return (await pollUntil(
    check,
    (v) => v !== undefined && v !== null && v !== false,
    timeoutMs,
    what,
    everyMs,
  )) as T;
}

/**
 * Waits until a snapshot pass that started after `afterMs` (a snapshot-tick run recorded in jobRuns by the
 * snapshot function) has finished: positive evidence that the controller has looked at everything that was
 * recorded before `afterMs` — so a check that it did NOT act on it means something.
 */
export async function snapshotPassAfter(firestore: Firestore, afterMs: number, timeoutMs = 20_000) {
  const runs = new FirestoreJobRunStore(firestore);
  return eventually(
    async () => {
      const run = await runs.get(SnapshotJob);
      return run && run.startedAt.getTime() > afterMs && run.finishedAt && run.counts.passes === 1
        ? run
        : undefined;
    },
    timeoutMs,
    'a snapshot pass that started after the reports',
  );
}

// ---------------------------------------------------------------------------------------------------------
// The controller side for tests: the API in this process on a free port (the real app, the real adapters on
// the emulators) and the snapshot function as its own functions-framework process, both on the test's own
// project and both reading the same worker settings.

export const ADMIN_TOKEN = 'workers-test-admin-token-0123456789';
export const workerToken = (workerId: string) => `worker-token-${workerId}-0123456789`;

/**
 * Short timings so that lapses happen within a test: sessions 6 s, grants 8 s (renewed under 5 s left).
 * The tick is the one `startTicking(1000)` paces; a test that ticks by hand or not at all never waits on a
 * renewal.
 */
export const FAST_SETTINGS: Record<string, string> = {
  WORKER_SESSION_TTL_SECONDS: '6',
  WORKER_REPORT_TTL_SECONDS: '3',
  WORKER_REPORT_INTERVAL_SECONDS: '1',
  WORKER_MAX_STALE_AGE_SECONDS: '10',
  OWNERSHIP_GRANT_SECONDS: '8',
  OWNERSHIP_RENEW_BEFORE_SECONDS: '5',
  ALLOCATION_SAFETY_MARGIN_SECONDS: '1',
  CLOCK_SKEW_SECONDS: '1',
  SNAPSHOT_RESEND_AFTER_SECONDS: '3',
  SNAPSHOT_TICK_SECONDS: '1',
};

/**
 * `workerId`'s client, registered and pulling, once a tick has given it `proxies` proxies in a snapshot it
 * has ACKed.
 */
export async function ackedWorker(
  plane: ControlPlane,
  workerId: string,
  proxies: number,
  timeoutMs = 45_000,
): Promise<WorkerClient> {
  const w = plane.client(workerId);
  const registered = await w.register();
  if (registered.status !== 200) throw new Error(`${workerId} not registered: ${registered.status}`);
  w.startPull();
  await plane.tick();
  await eventually(
    () => w.current?.proxies.length === proxies && w.ackBound?.version === w.current.version,
    timeoutMs,
    `${workerId}: ${proxies} proxies, ACKed`,
  );
  return w;
}

export interface ControlPlane {
  apiUrl: string;
  projectId: string;
  firestore: Firestore;
  pubsub: PubSub;
  proxies: FirestoreProxyStore;
  ownership: FirestoreOwnershipStore;
  snapshots: FirestoreSnapshotStore;
  client(workerId: string, instanceId?: string): WorkerClient;
  /** Publishes one snapshot-tick (what Cloud Scheduler does every minute). */
  tick(): Promise<void>;
  /** Ticks every `everyMs` (each once the previous tick's run has ended: snapshot-ticker.ts) until stop(). */
  startTicking(everyMs: number): void;
  admin<T = Record<string, unknown>>(method: string, path: string, body?: unknown): Promise<HttpAnswer<T>>;
  stop(): Promise<void>;
}

export async function startControlPlane(opts: {
  projectId: string;
  workerIds: string[];
  env?: Record<string, string>;
}): Promise<ControlPlane> {
  const env = { ...FAST_SETTINGS, ...opts.env };
  const plane = await startTestPlane({ projectId: opts.projectId, functions: ['snapshot'], env });
  const firestore = new Firestore({ projectId: opts.projectId });
  const proxies = new FirestoreProxyStore(firestore);
  const server = await startApiServer({
    deps: workersApiDeps({
      plane,
      projectId: opts.projectId,
      firestore,
      store: proxies,
      env,
      adminToken: ADMIN_TOKEN,
      workerTokens: opts.workerIds.map((workerId) => ({ workerId, token: workerToken(workerId) })),
    }),
  });
  const clients: WorkerClient[] = [];
  let ticker: PacedTicks | null = null;
  const tick = async () => {
    await plane.publisher.publish(SNAPSHOT_REQUESTS_TOPIC, Tick, { job: SnapshotJob });
  };
  return {
    apiUrl: server.url,
    projectId: opts.projectId,
    firestore,
    pubsub: plane.pubsub,
    proxies,
    ownership: new FirestoreOwnershipStore(firestore),
    snapshots: new FirestoreSnapshotStore(firestore),
    client(workerId, instanceId) {
      const c = new WorkerClient({
        apiUrl: server.url,
        workerId,
        token: workerToken(workerId),
        pubsub: plane.pubsub,
        instanceId,
      });
      clients.push(c);
      return c;
    },
    tick,
    startTicking(everyMs) {
      void ticker?.stop();
      ticker = startPacedTicks({ firestore, tick, everyMs });
    },
    async admin<T>(method: string, path: string, body?: unknown) {
      const res = await fetch(`${server.url}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${ADMIN_TOKEN}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      return { status: res.status, body: (text ? JSON.parse(text) : {}) as T };
    },
    async stop() {
      await ticker?.stop();
      await Promise.allSettled(clients.map((c) => c.stop()));
      // The requests in flight finish first (bounded): dropped at once, their handlers went on reading
      // Firestore after terminate() below — unhandled rejections that fail the whole run.
      await server.shutdown(5_000);
      await plane.stop();
      await firestore.terminate();
    },
  };
}

/** Who owns each proxy not being drained: the ownership records as the planner left them. */
export async function settledOwners(plane: ControlPlane): Promise<Map<string, string>> {
  const state = await plane.ownership.read();
  return new Map(
    [...state.records.values()].filter((r) => r.drainEpoch === null).map((r) => [r.proxy, r.owner]),
  );
}

/**
 * Four pool proxies `names` and two workers, gw-a and gw-b, registered, pulling and reporting every 400 ms,
 * once each holds two of them with no drain under way and has ACKed and reported: the start of every
 * two-worker hand-over test.
 */
export async function twoBalancedWorkers(
  plane: ControlPlane,
  names: readonly string[],
): Promise<{ a: WorkerClient; b: WorkerClient }> {
  for (const [i, name] of names.entries()) await plane.proxies.create(poolProxy(name, i + 1));
  const a = plane.client('gw-a');
  const b = plane.client('gw-b');
  for (const w of [a, b]) {
    if ((await w.register()).status !== 200) throw new Error(`${w.workerId} did not register`);
    w.startPull();
    w.startReporting(400);
  }
  await eventually(
    async () => {
      const records = [...(await plane.ownership.read()).records.values()];
      return (
        a.current?.proxies.length === 2 &&
        b.current?.proxies.length === 2 &&
        records.length === 4 &&
        records.every((r) => r.drainEpoch === null) &&
        a.ackBound?.version === a.current.version &&
        b.ackBound?.version === b.current.version &&
        a.lastRuntime &&
        b.lastRuntime
      );
    },
    45_000,
    'two proxies on each worker, no drain under way',
  );
  return { a, b };
}

/**
 * A Ready external proxy in (or out of) the gateway pool, as reconcile leaves it: status.ip is its endpoint
 * host (an `over.endpoint` included).
 */
export function poolProxy(name: string, i: number, over: Record<string, unknown> = {}): ProxyResource {
  const host = (over.endpoint as { host?: string } | undefined)?.host ?? `203.0.113.${i}`;
  return ProxyResource.parse({
    name,
    uid: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
    generation: 1,
    createdAt: new Date(),
    deletionRequestedAt: null,
    spec: {
      mode: 'external',
      endpoint: { host: `203.0.113.${i}`, port: 3128 },
      gatewayPool: true,
      capacity: 4,
      credentialsRef: { secret: `${name}-auth`, version: 'latest' },
      ...over,
    },
    status: { ...emptyStatus(), phase: 'Ready', ip: host, conditions: HEALTHY_CONDITIONS },
  });
}
