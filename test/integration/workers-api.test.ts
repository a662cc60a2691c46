// The worker endpoints' rules over real HTTP against the emulators (docs/gateway-control-plane.md): protocol
// negotiation, identities, session supersede, the ACK bound, report sequence/replay, outcome
// de-duplication, the filtered subscription, the latest snapshot, and the limits on every endpoint.
import { Timestamp } from '@google-cloud/firestore';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { workerFilter } from '../../shared/src/adapters/pubsub/snapshot-subscriptions.js';
import { MAX_TARGET_CHECKS } from '../../shared/src/messages/gateway-snapshot.js';
import { SNAPSHOT_REQUESTS_TOPIC } from '../../shared/src/messages/worker-snapshot-request.js';
import { testProjectId } from '../support/emulators.js';
import {
  type ControlPlane,
  eventually,
  poolProxy,
  startControlPlane,
  type WorkerClient,
  workerToken,
} from '../support/worker-client.js';

let plane: ControlPlane;
let w: WorkerClient;

beforeAll(async () => {
  plane = await startControlPlane({
    projectId: testProjectId('demo-wa'),
    workerIds: ['gw-1', 'gw-2'],
    // This file tests the rules, not lapses, and no reporter runs: at 6 s a loaded run could lapse the
    // session between two tests' calls (409 session_expired).
    env: { WORKER_SESSION_TTL_SECONDS: '60' },
  });
  await plane.proxies.create(poolProxy('ap-0', 1));
  await plane.proxies.create(poolProxy('ap-1', 2));
  w = plane.client('gw-1');
}, 120_000);

afterAll(async () => {
  await plane?.stop();
});

describe('registration (contract §2, §7, §8)', () => {
  it('refuses an incompatible protocol version with a clear code — never a downgrade', async () => {
    const r = await w.register(6);
    expect(r).toEqual({
      status: 400,
      body: expect.objectContaining({ error: 'unsupported_protocol_version', supported: { min: 1, max: 5 } }),
    });
    expect(await plane.firestore.collection('workers').doc('gw-1').get()).toHaveProperty('exists', false);
  });

  it.each<[string, string | undefined, string, number, string]>([
    ['no credential', undefined, 'gw-1', 401, 'unauthenticated'],
    ['an unknown token', 'not-a-worker-token-0123456789', 'gw-1', 401, 'unauthenticated'],
    ['another worker’s token', workerToken('gw-2'), 'gw-1', 403, 'forbidden'],
  ])('refuses %s', async (_n, token, workerId, status, error) => {
    const res = await fetch(`${plane.apiUrl}/v1/workers/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: JSON.stringify({ workerId, instanceId: 'i-1', zone: 'z-a', supportedProtocolVersion: 1 }),
    });
    expect(res.status).toBe(status);
    expect(await res.json()).toMatchObject({ error });
  });

  it('opens a session, makes the filtered subscription, and a retry of the same instance resumes it', async () => {
    const r = await w.register();
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      protocolVersion: 1,
      resumed: false,
      maxStaleAgeSeconds: 10,
      reportTtlSeconds: 3,
      snapshotSubscription: `projects/${plane.projectId}/subscriptions/gateway-snapshots--worker-gw-1`,
    });
    const [meta] = await plane.pubsub.subscription(String(r.body.snapshotSubscription)).getMetadata();
    expect(meta.filter).toBe(workerFilter('gw-1'));
    expect(meta.enableMessageOrdering).toBe(true);
    const again = await w.register();
    expect(again.body).toMatchObject({ resumed: true, sessionId: r.body.sessionId });
  });

  it('asks for a pass on a resumed registration too: the first one’s request may be what failed', async () => {
    expect((await w.register()).status).toBe(200);
    const sub = (
      await plane.pubsub.topic(SNAPSHOT_REQUESTS_TOPIC).createSubscription(`resumed-${Date.now()}`)
    )[0];
    const seen: { reason?: string; workerId?: string }[] = [];
    sub.on('message', (m) => {
      m.ack();
      seen.push(JSON.parse(m.data.toString()));
    });
    try {
      const again = await w.register();
      expect(again.body).toMatchObject({ resumed: true });
      await eventually(
        () => seen.some((x) => x.reason === 'register-resumed' && x.workerId === 'gw-1'),
        20_000,
        'the resumed registration’s pass request',
      );
    } finally {
      await sub.close();
      await sub.delete();
    }
  });

  it('refuses unknown fields and bad ids (400 invalid_request)', async () => {
    const r = await w.call('POST', '/v1/workers/register', {
      workerId: 'gw-1',
      instanceId: 'i',
      zone: 'z',
      supportedProtocolVersion: 1,
      extra: true,
    });
    expect(r).toMatchObject({ status: 400, body: { error: 'invalid_request' } });
    expect((await w.call('POST', '/v1/workers/-bad-/ack', {})).status).toBe(400);
  });
});

describe('snapshots, ACK and runtime reports', () => {
  beforeAll(async () => {
    w.startPull();
    await plane.tick();
    await eventually(
      () => w.current?.proxies.length === 2 && w.ackBound?.version === w.current.version,
      45_000,
      'the first snapshot with proxies ACKed',
    );
  });

  it('serves the latest full snapshot, identical to what Pub/Sub delivered', async () => {
    const r = await w.call('GET', `/v1/workers/gw-1/snapshot?sessionId=${w.sessionId}`);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      kind: 'full',
      version: w.current!.version,
      checksum: w.current!.checksum,
    });
  });

  it.each<[string, (s: { version: number; ownershipEpoch: number; checksum: string }) => object, string]>([
    [
      'a version never built',
      (s) => ({ version: s.version + 5, epoch: s.ownershipEpoch, checksum: s.checksum }),
      'unknown_snapshot',
    ],
    [
      'another checksum',
      (s) => ({ version: s.version, epoch: s.ownershipEpoch, checksum: 'f'.repeat(64) }),
      'checksum_mismatch',
    ],
    [
      'another epoch',
      (s) => ({ version: s.version, epoch: s.ownershipEpoch + 1, checksum: s.checksum }),
      'checksum_mismatch',
    ],
  ])('refuses an ACK naming %s', async (_n, mk, error) => {
    const r = await w.call('POST', '/v1/workers/gw-1/ack', { sessionId: w.sessionId, ...mk(w.current!) });
    expect(r).toMatchObject({ status: 409, body: { error } });
  });

  describe('on a held ACK bound', () => {
    // These name the bound in raw reports: the pull is paused so that no snapshot arriving mid-test (a pass
    // renewing grants, late under load) moves it — a report on the bound read before was then refused
    // ack_bound_mismatch.
    beforeAll(async () => {
      await w.stopPull();
    });
    afterAll(() => {
      w.startPull();
    });

    it('enforces the report rules: ACK bound, strict sequence, identical replay only', async () => {
      const bound = w.ackBound!;
      const base = {
        sessionId: w.sessionId,
        draining: false,
        counts: [{ proxy: 'ap-0', active: 1, reserved: 0 }],
      };
      const send = (over: object) => w.call('POST', '/v1/workers/gw-1/runtime', { ...base, ...over });
      const at = { snapshotVersion: bound.version, epoch: bound.epoch };
      expect(await send({ ...at, reportSequence: 100, snapshotVersion: bound.version + 1 })).toMatchObject({
        status: 409,
        body: { error: 'ack_bound_mismatch' },
      });
      expect(await send({ ...at, reportSequence: 100, epoch: bound.epoch + 1 })).toMatchObject({
        status: 409,
        body: { error: 'ack_bound_mismatch' },
      });
      const ok = await send({ ...at, reportSequence: 100 });
      expect(ok).toMatchObject({ status: 200, body: { acceptedSequence: 100, replay: false } });
      expect(await send({ ...at, reportSequence: 100 })).toMatchObject({
        status: 200,
        body: { replay: true },
      });
      expect(await send({ ...at, reportSequence: 100, counts: [] })).toMatchObject({
        status: 409,
        body: { error: 'sequence_conflict' },
      });
      expect(await send({ ...at, reportSequence: 99 })).toMatchObject({
        status: 409,
        body: { error: 'sequence_regression' },
      });
      expect(
        await send({
          ...at,
          reportSequence: 101,
          counts: [
            { proxy: 'ap-0', active: 1, reserved: 0 },
            { proxy: 'ap-0', active: 2, reserved: 0 },
          ],
        }),
      ).toMatchObject({ status: 400, body: { error: 'invalid_counts' } });
      expect(
        await send({ ...at, reportSequence: 101, counts: [{ proxy: 'ap-0', active: -1, reserved: 0 }] }),
      ).toMatchObject({ status: 400, body: { error: 'invalid_request' } });
      w.sequence = 101;
    });

    it('de-duplicates outcome batches by sequence; unknown stages and foreign proxies are ignored', async () => {
      const outcomes = [
        { proxy: 'ap-0', stage: 'DIAL', ok: false, latencyMs: 3000, target: 'example.com:443' },
        { proxy: 'ap-0', stage: 'TUNNEL', ok: true, latencyMs: 120, target: 'example.com:443', status: 200 },
        { proxy: 'ap-0', stage: 'QUIC_HANDSHAKE', ok: false, latencyMs: 1, target: 'example.com:443' },
        { proxy: 'not-mine', stage: 'DIAL', ok: false, latencyMs: 1, target: 'example.com:443' },
      ];
      const worker = () => plane.firestore.collection('workers').doc('gw-1').get();
      // A field of the last report that no decoder keeps: a write of the whole record would drop it.
      expect((await worker()).get('report')).not.toBeNull();
      await plane.firestore.collection('workers').doc('gw-1').update({ 'report.note': 'kept' });
      const before = (await worker()).data()!;
      expect(await w.outcomes(outcomes, 5)).toMatchObject({
        status: 200,
        body: { acceptedSequence: 5, duplicate: false, recorded: 2, ignored: 2 },
      });
      // The batch moves the session's outcome sequence and nothing else of the worker's document.
      expect((await worker()).data()).toEqual({ ...before, outcomeSequence: 5 });
      expect(await w.outcomes(outcomes, 5)).toMatchObject({
        status: 200,
        body: { acceptedSequence: 5, duplicate: true },
      });
      expect(await w.outcomes(outcomes, 3)).toMatchObject({
        status: 200,
        body: { acceptedSequence: 5, duplicate: true },
      });
      const batch = await plane.firestore.collection('workerOutcomes').doc(`gw-1__${w.sessionId}__5`).get();
      expect(batch.get('proxies')).toEqual({
        'ap-0': { ok: 1, dial: 1, proxyHandshake: 0, responseHeaders: 0, tunnel: 0, latencyMsSum: 120 },
      });
    });

    it('counts no outcome on a proxy the worker only names in its runtime report: its load report proves no ownership', async () => {
      // A worker credential must not fail proxies it does not own (another worker's, or crawler-only ones)
      // by reporting load on them and then DIAL failures: the passive track would take them out of service.
      const bound = w.ackBound!;
      const r = await w.call('POST', '/v1/workers/gw-1/runtime', {
        sessionId: w.sessionId,
        draining: false,
        snapshotVersion: bound.version,
        epoch: bound.epoch,
        reportSequence: ++w.sequence,
        counts: [
          { proxy: 'ap-0', active: 1, reserved: 0 },
          { proxy: 'not-mine', active: 1, reserved: 0 },
        ],
      });
      expect(r).toMatchObject({ status: 200 });
      const failures = Array.from({ length: 5 }, () => ({
        proxy: 'not-mine',
        stage: 'DIAL',
        ok: false,
        latencyMs: 1,
        target: 'example.com:443',
      }));
      expect(await w.outcomes(failures, 6)).toMatchObject({
        status: 200,
        body: { acceptedSequence: 6, duplicate: false, recorded: 0, ignored: 5 },
      });
      const batch = await plane.firestore.collection('workerOutcomes').doc(`gw-1__${w.sessionId}__6`).get();
      expect(batch.exists).toBe(false);
    });
  });

  it('bounds batch size and body size', async () => {
    const many = Array.from({ length: 2001 }, () => ({
      proxy: 'ap-0',
      stage: 'DIAL',
      ok: true,
      latencyMs: 1,
      target: 't',
    }));
    expect(await w.outcomes(many, 7)).toMatchObject({ status: 400, body: { error: 'invalid_request' } });
    const huge = await fetch(`${plane.apiUrl}/v1/workers/gw-1/runtime`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${workerToken('gw-1')}` },
      body: JSON.stringify({ pad: 'x'.repeat(1100 * 1024) }),
    });
    expect(huge.status).toBe(413);
    expect(await huge.json()).toMatchObject({ error: 'payload_too_large' });
  });

  it('stores the largest report the registration allows: limits.maxCounts counts of 63-character names', async () => {
    // 20,000 counts of 14-character names passed every check and then failed to store (Firestore: over
    // 1 MiB) on every retry as a 503: the worker's report lapsed and its capacity fell to 0.
    const max = w.registration!.limits.maxCounts;
    const counts = Array.from({ length: max }, (_, i) => ({
      proxy: `p${String(i).padStart(62, '0')}`,
      active: 1_000_000,
      reserved: 1_000_000,
    }));
    const r = await w.report({ counts });
    expect(r).toMatchObject({ status: 200, body: { acceptedSequence: w.sequence, replay: false } });
    const stored = (await plane.firestore.collection('workers').doc('gw-1').get()).get('report.counts');
    expect(stored).toHaveLength(max);
    expect(stored[max - 1]).toEqual(counts[max - 1]);
    expect(await w.report({ counts: [] })).toMatchObject({ status: 200 });
  });

  it('a routing policy may use its own 256 KiB, past the API-wide 64 KiB', async () => {
    // A well-formed body of ~100 KiB that the schema refuses: read whole and judged, not cut off at 64 KiB.
    const big = await plane.admin('PUT', '/v1/gateway/routing', { pad: 'x'.repeat(100 * 1024) });
    expect(big.status).toBe(400);
    const tooBig = await plane.admin('PUT', '/v1/gateway/routing', { pad: 'x'.repeat(300 * 1024) });
    expect(tooBig).toMatchObject({ status: 413, body: { error: 'payload_too_large' } });
  });

  it('refuses two routes of the same name (400), keeps the stored routing, and workers stay served', async () => {
    // The snapshot's wire schema refuses repeated route names: accepting them here once made every pass
    // save a snapshot it could not publish, and every worker went stale (snapshot_stale).
    const route = (hosts: string[], policy: string) => ({ name: 'dup', match: { hosts }, policy });
    const good = {
      routes: [route(['*.example.com'], 'round-robin'), { ...route(['*'], 'least-active'), name: 'rest' }],
    };
    expect((await plane.admin('PUT', '/v1/gateway/routing', good)).status).toBe(200);
    const before = await plane.admin('GET', '/v1/gateway/routing');
    const dup = { routes: [route(['*.example.com'], 'round-robin'), route(['*'], 'least-active')] };
    const r = await plane.admin('PUT', '/v1/gateway/routing', dup);
    expect(r).toMatchObject({
      status: 400,
      body: { error: 'invalid_request', issues: [{ path: 'routes', message: 'route names must be unique' }] },
    });
    expect(await plane.admin('GET', '/v1/gateway/routing')).toEqual(before);
    await plane.tick();
    await eventually(
      () => w.current?.routing.map((x) => x.name).join() === 'dup,rest',
      45_000,
      'the good routing delivered',
    );
  });

  it('stores a route’s target check, never sends it to workers, and refuses a bad one (400)', async () => {
    const shop = {
      name: 'shop',
      match: { hosts: ['*.shop.example'] },
      policy: 'round-robin',
      targetCheck: { url: 'https://www.shop.example/robots.txt' },
    };
    const rest = { name: 'rest', match: { hosts: ['*'] }, policy: 'least-active' };
    expect((await plane.admin('PUT', '/v1/gateway/routing', { routes: [shop, rest] })).status).toBe(200);
    const stored = await plane.admin('GET', '/v1/gateway/routing');
    expect(stored.body).toMatchObject({
      routes: [{ name: 'shop', targetCheck: { url: shop.targetCheck.url, expectedStatus: 200 } }, rest],
    });
    for (const targetCheck of [
      { url: 'ftp://www.shop.example/' },
      { url: 'https://x/', expectedStatus: 42 },
      // 1xx is never a final status: such a check would fail through every proxy.
      { url: 'https://x/', expectedStatus: 103 },
      // Credentials would be stored, shown by GET and sent through every proxy.
      { url: 'https://user:pass@www.shop.example/robots.txt' },
    ]) {
      const r = await plane.admin('PUT', '/v1/gateway/routing', { routes: [{ ...shop, targetCheck }, rest] });
      expect(r).toMatchObject({ status: 400, body: { error: 'invalid_request' } });
    }
    // Each checked route is one more request per proxy per probe: at most MAX_TARGET_CHECKS of them.
    const many = Array.from({ length: MAX_TARGET_CHECKS + 1 }, (_, i) => ({ ...shop, name: `shop-${i}` }));
    const tooMany = await plane.admin('PUT', '/v1/gateway/routing', { routes: [...many, rest] });
    expect(tooMany).toMatchObject({
      status: 400,
      body: { error: 'invalid_request', issues: [{ path: 'routes', code: 'too_many_target_checks' }] },
    });
    expect(await plane.admin('GET', '/v1/gateway/routing')).toEqual(stored);
    const enough = many.slice(0, MAX_TARGET_CHECKS);
    expect((await plane.admin('PUT', '/v1/gateway/routing', { routes: [...enough, rest] })).status).toBe(200);
    expect((await plane.admin('PUT', '/v1/gateway/routing', { routes: [shop, rest] })).status).toBe(200);
    await plane.tick();
    // The worker's strict schema would refuse a snapshot whose route carried the check: it gets the route.
    await eventually(
      () => w.current?.routing.map((x) => x.name).join() === 'shop,rest',
      45_000,
      'the routing delivered',
    );
    expect(w.current?.routing[0]).not.toHaveProperty('targetCheck');
  });

  it.each([
    ['__x__', 'Firestore-reserved'],
    ['__name__', 'Firestore-reserved'],
    [' ', 'not an attribute key'],
    ['a\u0000b', 'not an attribute key'],
  ])('refuses selector key %j (%s): 400 naming it, nothing stored, no pass asked', async (key) => {
    // A reserved key made the routing write fail with 3 INVALID_ARGUMENT, answered 503 Retry-After: 1 on
    // every retry; " " or NUL were stored, though no proxy attribute can ever carry them.
    const route = (selector: Record<string, string>) => ({
      routes: [{ name: 'r1', match: { hosts: ['*'] }, selector, policy: 'least-active' }],
    });
    const sub = (
      await plane.pubsub.topic(SNAPSHOT_REQUESTS_TOPIC).createSubscription(`requests-${Date.now()}`)
    )[0];
    const reasons: string[] = [];
    sub.on('message', (m) => {
      m.ack();
      reasons.push(String(JSON.parse(m.data.toString()).reason ?? 'tick'));
    });
    try {
      const doc = plane.firestore.collection('gatewayConfig').doc('routing');
      const before = (await doc.get()).updateTime?.toMillis();
      const r = await plane.admin('PUT', '/v1/gateway/routing', route({ [key]: 'v' }));
      expect(r).toMatchObject({
        status: 400,
        body: {
          error: 'invalid_request',
          issues: [{ path: `routes.0.selector.${key}`, code: 'invalid_key' }],
        },
      });
      expect((await doc.get()).updateTime?.toMillis()).toBe(before);
      // A good PUT asks for a pass: once its request is seen, the refused one would have been seen too.
      // A routing of its own each time: one already stored is no write and asks for no pass.
      const good = route({ 'pool.tier-1': `v-${key.codePointAt(0)}-${key.length}` });
      expect((await plane.admin('PUT', '/v1/gateway/routing', good)).status).toBe(200);
      await eventually(() => reasons.includes('admin'), 20_000, 'the good PUT’s pass request');
      expect(reasons.filter((x) => x === 'admin')).toHaveLength(1);
    } finally {
      await sub.close();
      await sub.delete();
    }
  });

  it('a routing stored with repeated names before that check is served with the later ones dropped', async () => {
    const route = (hosts: string[]) => ({
      name: 'dup',
      match: { hosts },
      selector: {},
      policy: 'least-active',
    });
    await plane.firestore
      .collection('gatewayConfig')
      .doc('routing')
      .set({
        routes: [route(['*.example.com']), route(['*'])],
        updatedAt: Timestamp.now(),
        updatedBy: 'legacy',
      });
    // A tick that lands while another pass runs is skipped (the planner is busy, and that pass may have
    // read the routing before it was stored): ticked again every 5 s until the routing is served.
    let tickedAt = 0;
    await eventually(
      () => {
        if (Date.now() - tickedAt >= 5_000) {
          tickedAt = Date.now();
          void plane.tick().catch(() => {});
        }
        return JSON.stringify(w.current?.routing.map((x) => x.match.hosts)) === '[["*.example.com"]]';
      },
      45_000,
      'the first "dup" route delivered, the second dropped',
    );
    expect(await plane.admin('GET', '/v1/gateway/routing')).toMatchObject({
      status: 200,
      body: { droppedDuplicates: ['dup'], routes: [route(['*.example.com'])] },
    });
    const fixed = { routes: [route(['*'])] };
    expect((await plane.admin('PUT', '/v1/gateway/routing', fixed)).status).toBe(200);
    expect((await plane.admin('GET', '/v1/gateway/routing')).body).not.toHaveProperty('droppedDuplicates');
  });

  it('rate-limits each worker (429 with Retry-After)', async () => {
    const answers = await Promise.all(
      Array.from({ length: 12 }, () => w.call('GET', `/v1/workers/gw-1/snapshot?sessionId=${w.sessionId}`)),
    );
    const limited = answers.filter((a) => a.status === 429);
    expect(limited.length).toBeGreaterThan(0);
    expect(limited[0]!.body).toMatchObject({ error: 'rate_limited' });
  });
});

describe('a new instance supersedes the session (contract §2)', () => {
  it('rejects every later call of the old session', async () => {
    const old = { id: w.sessionId, bound: w.ackBound! };
    const restarted = plane.client('gw-1', 'instance-2');
    const r = await restarted.register();
    expect(r).toMatchObject({ status: 200, body: { resumed: false } });
    expect(r.body.sessionId).not.toBe(old.id);
    const report = await w.call('POST', '/v1/workers/gw-1/runtime', {
      sessionId: old.id,
      reportSequence: 1_000,
      snapshotVersion: old.bound.version,
      epoch: old.bound.epoch,
      draining: false,
      counts: [],
    });
    expect(report).toMatchObject({ status: 409, body: { error: 'stale_session' } });
    const ack = await w.call('POST', '/v1/workers/gw-1/ack', {
      sessionId: old.id,
      version: old.bound.version,
      epoch: old.bound.epoch,
      checksum: w.current!.checksum,
    });
    expect(ack).toMatchObject({ status: 409, body: { error: 'stale_session' } });
    // With the old session id named explicitly: w's own pull may already have registered again.
    const outcomes = await w.call('POST', '/v1/workers/gw-1/outcomes', {
      sessionId: old.id,
      sequence: 50,
      outcomes: [],
    });
    expect(outcomes).toMatchObject({ status: 409, body: { error: 'stale_session' } });
  });
  it('so does the same instance offering a higher protocol: a stepped-down worker upgrading', async () => {
    // gw-2: gw-1's client above still runs its pull, and re-registers when superseded.
    const worker = plane.client('gw-2', 'instance-1');
    const at1 = await worker.register(1);
    expect(at1).toMatchObject({ status: 200, body: { protocolVersion: 1 } });
    const at2 = await worker.register(2);
    expect(at2).toMatchObject({ status: 200, body: { protocolVersion: 2, resumed: false } });
    expect(at2.body.sessionId).not.toBe(at1.body.sessionId);
    const report = await worker.call('POST', '/v1/workers/gw-2/runtime', {
      sessionId: at1.body.sessionId,
      reportSequence: 1,
      snapshotVersion: 1,
      epoch: 1,
      draining: false,
      counts: [],
    });
    expect(report).toMatchObject({ status: 409, body: { error: 'stale_session' } });
    // And offering it again resumes the session at 2 (what the worker's registration loop does).
    expect(await worker.register(2)).toMatchObject({
      body: { sessionId: at2.body.sessionId, resumed: true },
    });
  });
});
