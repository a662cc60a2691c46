// The snapshot pass against the Firestore emulator with SOCKS5 proxies in the gateway pool and workers of
// two protocols: a worker below protocol 4 has `protocol: ["http"]` in its strict schema, so one SOCKS5
// entry would make it refuse the whole snapshot. The planner gives every SOCKS5 proxy to a protocol-4
// worker and spreads the HTTP ones over both; with no protocol-4 worker a SOCKS5 proxy stays unowned.
// What is checked is what the pass stored and published: the bytes a worker would get.
import { Firestore } from '@google-cloud/firestore';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import type { SnapshotPassDeps } from '../../functions/snapshot/src/deps.js';
import { runSnapshotPass } from '../../functions/snapshot/src/pass.js';
import { FirestoreOwnershipStore } from '../../shared/src/adapters/firestore/ownership-store.js';
import { FirestoreProxyStore } from '../../shared/src/adapters/firestore/proxy-store.js';
import { FirestoreSnapshotStore } from '../../shared/src/adapters/firestore/snapshot-store.js';
import { FirestoreWorkerStore } from '../../shared/src/adapters/firestore/worker-store.js';
import type { GatewaySnapshotMessage } from '../../shared/src/messages/gateway-snapshot.js';
import { ManualClock } from '../../shared/src/ports/clock.js';
import { clearProject, testProjectId } from '../support/emulators.js';
import { countingHolders, firestorePassDeps } from '../support/snapshot-pass-deps.js';
import { poolProxy } from '../support/worker-client.js';
import { record } from '../support/worker-records.js';

const projectId = testProjectId();
const db = new Firestore({ projectId });
afterAll(() => db.terminate());
const T0 = new Date('2026-11-30T12:00:00Z');
const SOCKS = ['s-1', 's-2', 's-3', 's-4', 's-5', 's-6'];
const HTTP = ['h-1', 'h-2', 'h-3', 'h-4', 'h-5', 'h-6'];

function deps(published: GatewaySnapshotMessage[]): SnapshotPassDeps {
  return {
    ...firestorePassDeps(db, new ManualClock(T0), published),
    lockMs: 60_000,
    newHolder: countingHolders(),
  };
}

async function givenWorkers(versions: Record<string, number>) {
  const workers = new FirestoreWorkerStore(db);
  for (const [id, protocolVersion] of Object.entries(versions)) {
    const w = record(id, new Date(T0.getTime() + 60_000));
    await workers.put({ ...w, session: { ...w.session, protocolVersion } }, null);
  }
}

async function givenPool() {
  const proxies = new FirestoreProxyStore(db);
  let i = 1;
  for (const name of SOCKS)
    await proxies.create(
      poolProxy(name, i++, { endpoint: { host: `203.0.113.${i}`, port: 1080, protocol: 'socks5' } }),
    );
  for (const name of HTTP) await proxies.create(poolProxy(name, i++));
}

/** What each worker was sent (the pass publishes full snapshots to new sessions). */
const sentTo = (published: GatewaySnapshotMessage[], workerId: string) => {
  const m = published.filter((p) => p.workerId === workerId).at(-1);
  if (m?.kind !== 'full') throw new Error(`no full snapshot for ${workerId}`);
  return m;
};

beforeEach(() => clearProject(projectId));

describe('SOCKS5 proxies are planned only onto workers of protocol 4', () => {
  it('a mixed fleet: every SOCKS5 proxy goes to the protocol-4 worker; the protocol-3 one gets none, and HTTP ones', async () => {
    await givenWorkers({ 'gw-old': 3, 'gw-new': 4 });
    await givenPool();
    const published: GatewaySnapshotMessage[] = [];
    const summary = await runSnapshotPass(deps(published));
    expect(summary).toMatchObject({ published: 2, failures: 0 });

    const old = sentTo(published, 'gw-old');
    const neu = sentTo(published, 'gw-new');
    // What a protocol-3 worker's schema accepts: http entries only.
    expect(old.proxies.map((p) => p.protocol)).not.toContain('socks5');
    expect(old.proxies.length).toBeGreaterThan(0);
    const socksAt = neu.proxies.filter((p) => p.protocol === 'socks5');
    expect(socksAt.map((p) => p.name).sort()).toEqual(SOCKS);
    expect(socksAt[0]).toMatchObject({ port: 1080, credentialsRef: { secret: `${socksAt[0]!.name}-auth` } });
    // Every HTTP proxy owned once, over both workers.
    expect(
      [...old.proxies, ...neu.proxies.filter((p) => p.protocol === 'http')].map((p) => p.name).sort(),
    ).toEqual(HTTP);
    // The stored snapshot (what GET …/snapshot serves) is the published one.
    expect((await new FirestoreSnapshotStore(db).loadFull('gw-old'))?.proxies.map((p) => p.name)).toEqual(
      old.proxies.map((p) => p.name),
    );
    const { records } = await new FirestoreOwnershipStore(db).read();
    for (const s of SOCKS) expect(records.get(s)?.owner).toBe('gw-new');
  });

  it('no worker of protocol 4: SOCKS5 proxies stay unowned, HTTP proxies are served as before', async () => {
    await givenWorkers({ 'gw-old': 3 });
    await givenPool();
    const published: GatewaySnapshotMessage[] = [];
    expect(await runSnapshotPass(deps(published))).toMatchObject({ published: 1, failures: 0 });
    expect(sentTo(published, 'gw-old').proxies.map((p) => p.name)).toEqual(HTTP);
    const { records } = await new FirestoreOwnershipStore(db).read();
    expect([...records.keys()].sort()).toEqual(HTTP);
  });
});
