// Restarting the service loses no lease and no cooldown: the seed's documented caveat ("an operator
// restart drops all leases and cooldowns") removed. The first process is killed with SIGKILL (a crash, no
// shutdown hook); the second process rebuilds everything from Firestore before it serves.
import { Firestore } from '@google-cloud/firestore';
import { afterAll, describe, expect, it } from 'vitest';
import { LeaseClient, NoMatchError } from '../../shared/src/client/index.js';
import { testProjectId } from '../support/emulators.js';
import { type ApiProcess, proxy, startApiProcess, writeFleet } from '../support/leases.js';

const projectId = testProjectId();
const db = new Firestore({ projectId });
const TOKEN = 'restart-test-token-0123';
const env = {
  GOOGLE_CLOUD_PROJECT: projectId,
  DISCOVERY_TOKENS: `t:${TOKEN}`,
  LEASE_COOLDOWN_SECONDS: '600',
};
const running: ApiProcess[] = [];

afterAll(async () => {
  await Promise.all(running.map((s) => s.stop()));
  await db.terminate();
});

async function noMatch(p: Promise<unknown>) {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  if (!(err instanceof NoMatchError)) throw new Error(`expected no_match, got ${String(err)}`);
  return err.counts;
}

describe('service restart', () => {
  it('keeps every lease and cooldown across a crash', { timeout: 120_000 }, async () => {
    await writeFleet(db, [proxy('a', { capacity: 2 })]);
    const first = await startApiProcess(env);
    running.push(first);
    const c1 = new LeaseClient({ baseUrl: first.url, token: TOKEN });
    const l1 = await c1.acquire({ target: 'shop.example', ttlSeconds: 600 });
    const l2 = await c1.acquire({ ttlSeconds: 600 });
    await c1.report(l1.leaseId, 'rate_limited');
    await first.kill();

    const second = await startApiProcess(env);
    running.push(second);
    const c2 = new LeaseClient({ baseUrl: second.url, token: TOKEN });
    expect((await c2.listProxies()).proxies[0]).toMatchObject({ name: 'a', activeLeases: 2 });
    expect(await noMatch(c2.acquire({}))).toMatchObject({ atCapacity: 1 });

    expect((await c2.renew(l2.leaseId, 900)).ttlSeconds).toBe(900);
    await c2.report(l1.leaseId, 'ok');
    await c2.release(l1.leaseId);
    expect(await noMatch(c2.acquire({ target: 'shop.example' }))).toMatchObject({
      inCooldown: 1,
      atCapacity: 0,
    });
    const l3 = await c2.acquire({ target: 'other.example' });
    expect(l3.proxy.name).toBe('a');
    await c2.release(l2.leaseId);
    await c2.release(l3.leaseId);
    expect((await c2.listProxies()).proxies[0]).toMatchObject({ activeLeases: 0 });
  });
});
