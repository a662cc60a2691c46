// Support for the lease tests: proxies stored the way the admin API stores them, the API (with leases)
// in-process or as real main.ts processes, and the stored leases read back to check invariants.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import type { Firestore } from '@google-cloud/firestore';
import { Registry } from 'prom-client';
import { bundledEntry } from '../../emulators/launcher/entry-bundle.js';
import { freePort } from '../../emulators/launcher/free-port.js';
import { waitForHttp } from '../../emulators/launcher/wait.js';
import { API_ENTRY } from '../../emulators/local-plane/services.js';
import { type ApiDeps, createApp } from '../../functions/api/src/app.js';
import { anyOf } from '../../functions/api/src/auth/authenticator.js';
import { staticTokenAuthenticator } from '../../functions/api/src/auth/static-tokens.js';
import type { LeaseConfig } from '../../functions/api/src/leases/config.js';
import { buildLeaseApi, type LeaseApiRuntime } from '../../functions/api/src/leases/wiring.js';
import { Collections } from '../../shared/src/adapters/firestore/collections.js';
import { LEASE_COLLECTIONS } from '../../shared/src/adapters/firestore/lease-collections.js';
import { decodeLease } from '../../shared/src/adapters/firestore/lease-converter.js';
import { proxyToFirestore } from '../../shared/src/adapters/firestore/proxy-converter.js';
import { FirestoreProxyStore } from '../../shared/src/adapters/firestore/proxy-store.js';
import { memoryLogger } from '../../shared/src/adapters/log/json-logger.js';
import { repoRoot } from '../../shared/src/config/local-ports.js';
import { type ProxyOptions, proxy } from '../../shared/src/domain/leases/fixtures.unit.js';
import type { Lease } from '../../shared/src/domain/leases/model.js';
import type { ProxyResource } from '../../shared/src/domain/proxy.js';
import type { Clock } from '../../shared/src/ports/clock.js';
import type { SecretReader } from '../../shared/src/ports/secrets.js';
import { RecordingReconcilePublisher } from '../../shared/src/testing/recording-publisher.js';

export { type ProxyOptions, proxy };

export const ADMIN_TOKEN = 'lease-tests-admin-token-0123';

/** The admin authenticator of leaseTestApp: ADMIN_TOKEN, named "admin". */
export const adminAuthenticator = () =>
  anyOf([staticTokenAuthenticator([{ name: 'admin', token: ADMIN_TOKEN }])]);

/**
 * Writes the proxies as reconcile left them: an external proxy's status.ip is its endpoint host (the copy
 * reconcileExternal makes; a test that points a fixture at a local proxy edits only the spec). A test of
 * a status behind its spec writes that document itself (or edits the spec through the API, as
 * leases-cordon.test.ts does).
 */
export async function writeFleet(db: Firestore, proxies: ProxyResource[]): Promise<void> {
  for (let i = 0; i < proxies.length; i += 400) {
    const batch = db.batch();
    for (const p of proxies.slice(i, i + 400)) {
      const reconciled =
        p.spec.mode === 'external' && p.status.ip !== null
          ? { ...p, status: { ...p.status, ip: p.spec.endpoint.host } }
          : p;
      batch.set(db.collection(Collections.proxies).doc(p.name), proxyToFirestore(reconciled));
    }
    await batch.commit();
  }
}

/** The API with its lease routes, in-process on a real Firestore (emulator), for app.request() tests. */
export function leaseTestApp(opts: {
  firestore: Firestore;
  clock: Clock;
  secrets: SecretReader;
  lease: Partial<LeaseConfig>;
  /** More of the service (jobs, the fleet page, the gateway routes) beside the lease routes. */
  extra?: Partial<ApiDeps>;
  /** Candidates a first plan ranks (service.ts CANDIDATE_LIMIT unless set). */
  candidateLimit?: number;
}) {
  const log = memoryLogger();
  const registry = new Registry();
  const leases: LeaseApiRuntime = buildLeaseApi({
    firestore: opts.firestore,
    secrets: opts.secrets,
    clock: opts.clock,
    // The tests' ManualClock steps stand for elapsed time (never a wall clock stepped back), so it times the
    // monotonic ages too: the credentials quarantine ends when a test advances it past 30 s.
    monotonicNow: () => opts.clock.now().getTime(),
    registry,
    log,
    config: { tokens: [], cooldownWindowMs: 60_000, credentialsCacheMs: 0, ...opts.lease },
    // Tests hold a secret read open while they change the fleet (a catalog that follows Firestore in
    // seconds on a loaded machine): the 5 s bound would end such a read first, and the test would pass
    // for the wrong reason. cached-reader.unit.test.ts covers the bound itself.
    credentialsReadDeadlineMs: 60_000,
    ...(opts.candidateLimit !== undefined && { candidateLimit: opts.candidateLimit }),
  });
  const publisher = new RecordingReconcilePublisher();
  const app = createApp({
    version: 'test',
    store: new FirestoreProxyStore(opts.firestore),
    publisher,
    clock: opts.clock,
    auth: adminAuthenticator(),
    log,
    leases,
    ...opts.extra,
  });
  return { app, leases, log, registry, publisher };
}

export async function storedLeases(db: Firestore): Promise<Lease[]> {
  const snap = await db.collection(LEASE_COLLECTIONS.leases).get();
  return snap.docs.map((d) => {
    const lease = decodeLease(d.data());
    if (!lease) throw new Error(`lease ${d.id} does not decode`);
    return lease;
  });
}

/**
 * The most leases (an exclusive one counting as `capacity`) any proxy carried at any instant, from the
 * stored grant, expiry and release times: each lease occupies [grantedAt, min(expiresAt, releasedAt)).
 */
export function peakUsage(
  leases: readonly Lease[],
  capacityOf: (proxy: string) => number,
): Map<string, number> {
  const events = new Map<string, Array<{ t: number; d: number }>>();
  for (const l of leases) {
    const end = Math.min(l.expiresAt.getTime(), l.releasedAt?.getTime() ?? Number.POSITIVE_INFINITY);
    const weight = l.exclusive ? capacityOf(l.proxy) : 1;
    const list = events.get(l.proxy) ?? [];
    list.push({ t: l.grantedAt.getTime(), d: weight }, { t: end, d: -weight });
    events.set(l.proxy, list);
  }
  const peaks = new Map<string, number>();
  for (const [p, list] of events) {
    // Ends before starts at the same instant: the intervals are half-open.
    list.sort((a, b) => a.t - b.t || a.d - b.d);
    let now = 0;
    let peak = 0;
    for (const e of list) {
      now += e.d;
      peak = Math.max(peak, now);
    }
    peaks.set(p, peak);
  }
  return peaks;
}

export interface ApiProcess {
  url: string;
  pid: number;
  /** SIGTERM and wait (a graceful restart). */
  stop(): Promise<void>;
  /** SIGKILL and wait (a crash). */
  kill(): Promise<void>;
}

/**
 * Starts the real API entry point (functions/api/src/main.ts bundled as the local plane runs it, under tsx with `tsx`, or `entry`: its compiled main.js
 * as `npm run build:functions` deploys it) as its own process on a free port, with the emulators of this
 * test run, and waits until /healthz answers.
 */
export async function startApiProcess(
  env: Record<string, string>,
  { timeoutMs = 90_000, entry, tsx = false }: { timeoutMs?: number; entry?: string; tsx?: boolean } = {},
): Promise<ApiProcess> {
  const port = await freePort();
  const source = join(repoRoot, API_ENTRY);
  const args = entry ? [entry] : tsx ? ['--import', 'tsx', source] : [await bundledEntry(source)];
  const child = spawn(process.execPath, args, {
    env: {
      ...process.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      ADMIN_TOKENS: `admin:${ADMIN_TOKEN}`,
      ...env,
    },
    stdio: ['ignore', 'ignore', 'pipe'],
    detached: true,
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-20_000);
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = `http://127.0.0.1:${port}`;
  try {
    await Promise.race([
      waitForHttp(`${url}/healthz`, { timeoutMs }),
      exited.then(() => {
        throw new Error(`api exited before serving:\n${stderr}`);
      }),
    ]);
  } catch (err) {
    signalGroup(child.pid, 'SIGKILL');
    throw err;
  }
  const stopWith = async (sig: NodeJS.Signals) => {
    signalGroup(child.pid, sig);
    const timer = setTimeout(() => signalGroup(child.pid, 'SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  };
  return { url, pid: child.pid ?? -1, stop: () => stopWith('SIGTERM'), kill: () => stopWith('SIGKILL') };
}

function signalGroup(pid: number | undefined, sig: NodeJS.Signals): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, sig);
  } catch {
    // already gone
  }
}
