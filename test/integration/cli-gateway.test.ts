// `proxyplane routing get|apply` and `proxyplane gateway workers|ownership|reclaim|unreclaim` against the
// API process on the Firestore and Pub/Sub emulators: the routing saved with `get -o yaml`, edited and
// applied back is what gets stored (unchanged → nothing written, the revision kept); a file saved before
// someone else's change writes nothing over it; a reclaim reaches the store and ends early.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Firestore } from '@google-cloud/firestore';
import { PubSub } from '@google-cloud/pubsub';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SNAPSHOT_REQUESTS_TOPIC } from '../../shared/src/messages/worker-snapshot-request.js';
import { cliInProcess } from '../support/cli-process.js';
import { firestoreHost, testProjectId } from '../support/emulators.js';
import { ADMIN_TOKEN, type ApiProcess, startApiProcess } from '../support/leases.js';

const dir = mkdtempSync(join(tmpdir(), 'cli-gateway-test-'));
const projectId = testProjectId('demo-cli-gw');
let api: ApiProcess;
let db: Firestore;
let pubsub: PubSub;
const cli = cliInProcess({ dir, apiUrl: () => api.url, adminToken: ADMIN_TOKEN });

async function ok(args: string[]): Promise<string> {
  const r = await cli(args);
  expect(r, r.stderr).toMatchObject({ code: 0 });
  return r.stdout;
}

const storedRouting = async () => (await db.collection('gatewayConfig').doc('routing').get()).data();

beforeAll(async () => {
  db = new Firestore({ projectId, host: `${firestoreHost().host}:${firestoreHost().port}`, ssl: false });
  pubsub = new PubSub({ projectId });
  await Promise.all(['reconcile-requests', SNAPSHOT_REQUESTS_TOPIC].map((t) => pubsub.createTopic(t)));
  api = await startApiProcess({ GOOGLE_CLOUD_PROJECT: projectId });
  const fleet = cli.file(
    'fleet.yaml',
    'name: gw-a\nspec: {mode: external, endpoint: {host: 127.0.0.1, port: 3128}, gatewayPool: true}\n---\n' +
      'name: solo\nspec: {mode: external, endpoint: {host: 127.0.0.1, port: 3129}}\n',
  );
  await ok(['proxies', 'create', '-f', fleet]);
}, 120_000);

afterAll(async () => {
  await api?.stop();
  await pubsub?.close();
  await db?.terminate();
  rmSync(dir, { recursive: true, force: true });
});

describe('routing get -o yaml | edit | routing apply -f', () => {
  it('shows the built-in default at revision 0, and applies a file written by hand', async () => {
    expect(await ok(['routing', 'get'])).toMatch(
      /^the built-in default \(no routing stored; revision 0\)\n#\s+NAME/,
    );
    const file = cli.file(
      'routing.yaml',
      [
        'routes:',
        '  - {name: shop, match: {hosts: ["*.shop.example"]}, policy: sticky, stickyKey: {header: X-Session}}',
        '  - {name: rest, match: {hosts: ["*"]}, policy: least-active}',
      ].join('\n'),
    );
    expect(await ok(['routing', 'apply', '-f', file])).toBe(
      'routing configured: revision 0 → 1, 2 routes (added shop, rest; removed default); the gateways get it with the next snapshot\n',
    );
    const stored = await storedRouting();
    expect(stored).toMatchObject({ revision: 1, routes: [{ name: 'shop' }, { name: 'rest' }] });
    // The header name is stored as the wire schema reads it (lower case).
    expect(stored?.routes[0].stickyKey).toEqual({ header: 'x-session' });
    expect(await ok(['routing', 'get'])).toMatch(/sticky \(header x-session\)/);
  });

  it('round-trips: the saved file applied as it is writes nothing; edited, it changes what was edited', async () => {
    const saved = await ok(['routing', 'get', '-o', 'yaml']);
    expect(saved).toMatch(/^revision: 1$/m);
    const file = cli.file('saved.yaml', saved);
    expect(await ok(['routing', 'apply', '-f', file])).toBe('routing unchanged (revision 1, 2 routes)\n');
    expect((await storedRouting())?.revision).toBe(1);

    const edited = cli.file('edited.yaml', saved.replace('policy: least-active', 'policy: round-robin'));
    expect(await ok(['routing', 'apply', '-f', edited])).toMatch(
      /^routing configured: revision 1 → 2, 2 routes \(changed rest\)/,
    );
    expect(await storedRouting()).toMatchObject({
      revision: 2,
      routes: [{ name: 'shop' }, { policy: 'round-robin' }],
    });
  });

  it('refuses a saved file once the routing changed since, writing nothing', async () => {
    const saved = await ok(['routing', 'get', '-o', 'json']);
    // Someone else's edit, made after the file was saved.
    const swapped = cli.file(
      'swapped.yaml',
      'routes:\n  - {name: rest, match: {hosts: ["*"]}, policy: least-active}\n',
    );
    await ok(['routing', 'apply', '-f', swapped]);
    const before = await storedRouting();

    const mine = cli.file('mine.json', saved.replace('"round-robin"', '"least-active"'));
    const r = await cli(['routing', 'apply', '-f', mine]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /^error: precondition_failed — .*mine\.json was saved at routing revision 2, and the routing is now at revision 3/,
    );
    expect(await storedRouting()).toEqual(before);

    // Without its revision, the file is applied over whatever is stored.
    const { revision: _r, ...rest } = JSON.parse(saved);
    const unpinned = cli.file('unpinned.json', JSON.stringify(rest));
    expect(await ok(['routing', 'apply', '-f', unpinned])).toMatch(
      /^routing configured: revision 3 → 4, 2 routes \(added shop; changed rest\)/,
    );
  });

  it('refuses a file the API would refuse before sending anything (exit 2)', async () => {
    const before = await storedRouting();
    const bad = cli.file('bad.yaml', 'routes:\n  - {name: x, match: {hosts: ["*"]}, policy: sticky}\n');
    const r = await cli(['routing', 'apply', '-f', bad]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(
      /^error: invalid_input — .*bad\.yaml holds routes the API would refuse\n {2}routes\.0: stickyKey is required/,
    );
    const typo = cli.file('typo.yaml', 'routes: []\nrevison: 3\n');
    expect((await cli(['routing', 'apply', '-f', typo])).stderr).toMatch(/unknown field\(s\) revison/);
    expect(await storedRouting()).toEqual(before);
  });
});

describe('a stored routing edited out of shape', () => {
  it('routing get says so and how to fix it; routing apply replaces it', async () => {
    const doc = db.collection('gatewayConfig').doc('routing');
    const revision = (await storedRouting())?.revision as number;
    await doc.update({ routes: [{ name: 'broken' }] });
    const got = await cli(['routing', 'get']);
    expect(got.code).toBe(1);
    expect(got.stderr).toMatch(
      new RegExp(
        `^error: stored_routing_invalid — the stored routing \\(revision ${revision}\\) no longer fits the route schema.*routing apply -f FILE`,
      ),
    );
    const file = cli.file(
      'fix.yaml',
      'routes:\n  - {name: rest, match: {hosts: ["*"]}, policy: least-active}\n',
    );
    expect(await ok(['routing', 'apply', '-f', file])).toMatch(
      new RegExp(
        `^routing configured: revision ${revision} → ${revision + 1}, 1 route \\(replaced a stored routing that did not fit the route schema\\)`,
      ),
    );
    expect(await ok(['routing', 'get'])).toMatch(new RegExp(`^revision ${revision + 1}, written by`));
  });
});

describe('gateway workers | ownership | reclaim | unreclaim', () => {
  it('lists no workers and the pool proxy without an owner', async () => {
    expect(await ok(['gateway', 'workers'])).toMatch(/^ownership epoch \d+\nNo gateway workers\.\n$/);
    expect(await ok(['gateway', 'workers', '--all'])).toMatch(/No gateway workers\./);
    const own = await ok(['gateway', 'ownership']);
    expect(own).toMatch(/^PROXY\s+OWNER/m);
    expect(own).toMatch(/^gw-a\s+-\s+-\s+-\s+-\s+\d+\s+0\s+no_owner$/m);
  });

  it('reclaims a proxy until the TTL, and unreclaims it', async () => {
    const out = await ok(['gateway', 'reclaim', 'gw-a', '--ttl', '600']);
    expect(out).toMatch(/^proxy gw-a reclaimed until \S+ \(in 10m\)/);
    const reclaim = (await db.collection('reclaims').doc('gw-a').get()).data();
    expect(reclaim).toBeDefined();
    await ok(['gateway', 'unreclaim', 'gw-a']);
    expect((await db.collection('reclaims').doc('gw-a').get()).exists).toBe(false);
  });

  it('says so when the proxy reclaimed is not in the gateway pool (nothing to drain)', async () => {
    expect(await ok(['gateway', 'reclaim', 'gw-a', '--ttl', '600'])).toMatch(/: its gateway owner drains it/);
    const out = await ok(['gateway', 'reclaim', 'solo', '--ttl', '600']);
    expect(out).toMatch(
      /^proxy solo reclaimed until \S+ \(in 10m\): it is not in the gateway pool \(spec.gatewayPool is false\), so nothing drains/,
    );
    await ok(['gateway', 'unreclaim', 'solo']);
    await ok(['gateway', 'unreclaim', 'gw-a']);
  });

  it('refuses a TTL out of range and an unknown proxy', async () => {
    const short = await cli(['gateway', 'reclaim', 'gw-a', '--ttl', '30']);
    expect(short).toMatchObject({ code: 2 });
    expect(short.stderr).toMatch(/--ttl must be from 60 to 604800 seconds/);
    const unknown = await cli(['gateway', 'reclaim', 'no-such', '--ttl', '600']);
    expect(unknown).toMatchObject({ code: 1 });
    expect(unknown.stderr).toMatch(/^error: not_found — no such proxy/);
  });
});
