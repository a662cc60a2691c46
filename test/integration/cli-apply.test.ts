// `proxyplane proxies apply | patch | reconcile` against the API process on the Firestore and Pub/Sub
// emulators: apply creates, says "unchanged" without writing (the document's update time does not move),
// "configured" with the API showing the new spec; a change the API refuses, a proxy being deleted and a bad
// file change nothing; a multi-proxy file that fails part-way says what was applied; patch sends a merge
// patch; reconcile publishes a manual reconcile request. The CLI runs in this worker with a user's
// environment (cliInProcess, test/support/cli-process.ts), except where being a process matters: a spec
// piped to stdin, and the part-way failure (what the process printed to stdout before it exits 1).
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Firestore } from '@google-cloud/firestore';
import { PubSub, type Subscription } from '@google-cloud/pubsub';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Collections } from '../../shared/src/adapters/firestore/collections.js';
import { proxyToFirestore } from '../../shared/src/adapters/firestore/proxy-converter.js';
import { repoRoot } from '../../shared/src/config/local-ports.js';
import { emptyStatus, ProxySpec } from '../../shared/src/domain/proxy.js';
import { cliInProcess, cliRunner } from '../support/cli-process.js';
import { firestoreHost, testProjectId } from '../support/emulators.js';
import { ADMIN_TOKEN, type ApiProcess, startApiProcess } from '../support/leases.js';
import { pollUntil } from '../support/poll.js';
import { storedProxy } from '../support/stored-proxy.js';

const dir = mkdtempSync(join(tmpdir(), 'cli-apply-test-'));
const projectId = testProjectId('demo-cli-apply');
let api: ApiProcess;
let db: Firestore;
let pubsub: PubSub;
let sub: Subscription;
const published: Array<{ proxy: string; reason: string }> = [];
const shell = { dir, apiUrl: () => api.url, adminToken: ADMIN_TOKEN };
const cli = cliInProcess(shell);
const cliProcess = cliRunner(shell);

const stored = (name: string) => storedProxy(db, name);

async function storedNames(): Promise<string[]> {
  return (await db.collection(Collections.proxies).listDocuments()).map((d) => d.id).sort();
}

const ext = (capacityLine = '', attrs = 'pool: apply') =>
  `name: ap-ext\nspec:\n  mode: external\n  endpoint: {host: 127.0.0.1, port: 3128}\n${capacityLine}  attributes: {${attrs}}\n`;
const managed = (zone = 'europe-west1-b') =>
  `name: ap-man\nspec: {mode: managed, zone: ${zone}, credentialsRef: {secret: proxy-creds}, attributes: {pool: apply, region: eu}}\n`;

beforeAll(async () => {
  db = new Firestore({ projectId, host: `${firestoreHost().host}:${firestoreHost().port}`, ssl: false });
  pubsub = new PubSub({ projectId });
  const [topic] = await pubsub.createTopic('reconcile-requests');
  [sub] = await topic.createSubscription('reconcile-requests--cli-apply');
  sub.on('message', (m) => {
    m.ack();
    published.push(JSON.parse(m.data.toString()));
  });
  api = await startApiProcess({ GOOGLE_CLOUD_PROJECT: projectId });
}, 120_000);

afterAll(async () => {
  await api?.stop();
  await sub?.close();
  await pubsub?.close();
  await db?.terminate();
  rmSync(dir, { recursive: true, force: true });
});

describe('proxyplane proxies apply', () => {
  it('creates what is absent, then says unchanged and writes nothing when applied again', async () => {
    const path = cli.file('fleet.yaml', `${ext()}---\n${managed()}`);
    const first = await cli(['proxies', 'apply', '-f', path]);
    expect(first, first.stderr).toMatchObject({
      code: 0,
      stdout: 'proxy/ap-ext created\nproxy/ap-man created\n',
    });
    const before = [await stored('ap-ext'), await stored('ap-man')];
    expect(before.map((s) => s?.generation)).toEqual([1, 1]);

    const again = await cli(['proxies', 'apply', '-f', path]);
    expect(again, again.stderr).toMatchObject({
      code: 0,
      stdout: 'proxy/ap-ext unchanged\nproxy/ap-man unchanged\n',
    });
    expect([await stored('ap-ext'), await stored('ap-man')]).toEqual(before);
  });

  it('judges unchanged as the API does: defaults spelled out and keys in another order are the same spec', async () => {
    const got = await cli(['proxies', 'get', 'ap-ext', '-o', 'json']);
    const spec = (JSON.parse(got.stdout) as { spec: Record<string, unknown> }).spec;
    expect(spec).toMatchObject({ capacity: 4, endpoint: { protocol: 'http' } }); // the API's defaults
    const reordered = Object.fromEntries(Object.entries(spec).reverse());
    const before = await stored('ap-ext');
    const r = await cliProcess(
      ['proxies', 'apply', '-f', '-'],
      {},
      JSON.stringify({ spec: reordered, name: 'ap-ext' }),
    );
    expect(r, r.stderr).toMatchObject({ code: 0, stdout: 'proxy/ap-ext unchanged\n' });
    expect(await stored('ap-ext')).toEqual(before);
  });

  it('configures a proxy whose spec differs: the API stores the new spec, the unchanged one is not written', async () => {
    const manBefore = await stored('ap-man');
    const path = cli.file(
      'fleet-v2.yaml',
      `${ext('  capacity: 8\n', 'pool: apply, tier: gold')}---\n${managed()}`,
    );
    const r = await cli(['proxies', 'apply', '-f', path]);
    expect(r, r.stderr).toMatchObject({
      code: 0,
      stdout: 'proxy/ap-ext configured\nproxy/ap-man unchanged\n',
    });
    const got = await cli(['proxies', 'get', 'ap-ext', '-o', 'json']);
    expect(JSON.parse(got.stdout)).toMatchObject({
      generation: 2,
      spec: { capacity: 8, attributes: { pool: 'apply', tier: 'gold' } },
    });
    expect(await stored('ap-man')).toEqual(manBefore);
    const json = await cli(['proxies', 'apply', '-f', path, '-o', 'json']);
    expect(
      (JSON.parse(json.stdout) as Array<{ name: string; generation: number }>).map((p) => [
        p.name,
        p.generation,
      ]),
    ).toEqual([
      ['ap-ext', 2],
      ['ap-man', 1],
    ]);
  });

  it('a change the API refuses (a managed zone) is its code and hint, exit 1, and changes nothing', async () => {
    const before = await stored('ap-man');
    const r = await cli(['proxies', 'apply', '-f', cli.file('move.yaml', managed('us-east1-b'))]);
    expect(r).toMatchObject({ code: 1, stdout: '' });
    expect(r.stderr).toMatch(
      /^error: immutable_field — `mode`, `provider` and a managed proxy's `zone` cannot change/,
    );
    expect(r.stderr).toContain('\n  zone: zone is immutable (it is "europe-west1-b")');
    expect(await stored('ap-man')).toEqual(before);
  });

  it('a file that fails part-way says what was applied before the failure and what was not sent', async () => {
    const path = cli.file(
      'partial.yaml',
      [
        'name: ap-new\nspec: {mode: external, endpoint: {host: 127.0.0.2, port: 3128}}\n',
        managed('us-east1-b'),
        'name: ap-later\nspec: {mode: external, endpoint: {host: 127.0.0.3, port: 3128}}\n',
      ].join('---\n'),
    );
    const manBefore = await stored('ap-man');
    const r = await cliProcess(['proxies', 'apply', '-f', path]);
    expect(r).toMatchObject({ code: 1, stdout: 'proxy/ap-new created\n' });
    expect(r.stderr.split('\n')[0]).toMatch(/^error: immutable_field — /);
    expect(r.stderr).toContain(
      '\n  stopped at proxy/ap-man (2 of 3): applied before it: proxy/ap-new created; not sent: proxy/ap-later\n',
    );
    expect(await storedNames()).toEqual(['ap-ext', 'ap-man', 'ap-new']);
    expect(await stored('ap-man')).toEqual(manBefore);
  });

  it('a bad file is refused before anything is sent (exit 2): not even its valid changes are applied', async () => {
    const before = await stored('ap-ext');
    const path = cli.file(
      'bad.yaml',
      `${ext('  capacity: 16\n')}---\nname: ap-bad\nspec: {mode: managed, zone: mars}\n`,
    );
    const r = await cli(['proxies', 'apply', '-f', path]);
    expect(r).toMatchObject({ code: 2, stdout: '' });
    expect(r.stderr).toMatch(
      /^error: invalid_input — \S*bad\.yaml is not a valid proxy definition; nothing was applied\n/,
    );
    expect(r.stderr).toContain('document 2: spec.zone: a GCE zone such as us-central1-a');
    expect(await stored('ap-ext')).toEqual(before);
    expect(await storedNames()).toEqual(['ap-ext', 'ap-man', 'ap-new']);
  });
});

describe('proxyplane proxies apply, a proxy stored before a spec check', () => {
  // A managed proxy without credentialsRef, written before the API refused such specs: the API does not
  // refuse edits of it for what it already lacks, so apply does not either.
  beforeAll(async () => {
    await db
      .collection(Collections.proxies)
      .doc('ap-legacy')
      .set(
        proxyToFirestore({
          name: 'ap-legacy',
          uid: '00000000-0000-4000-8000-000000000001',
          generation: 1,
          createdAt: new Date(),
          deletionRequestedAt: null,
          spec: ProxySpec.parse({ mode: 'managed', zone: 'us-east1-b' }),
          status: emptyStatus(),
        }),
      );
  });

  it('is unchanged when the file has its spec, and configured with a change the API takes', async () => {
    const before = await stored('ap-legacy');
    const same = cli.file('legacy.yaml', 'name: ap-legacy\nspec: {mode: managed, zone: us-east1-b}\n');
    const r = await cli(['proxies', 'apply', '-f', same]);
    expect(r, r.stderr).toMatchObject({ code: 0, stdout: 'proxy/ap-legacy unchanged\n' });
    expect(await stored('ap-legacy')).toEqual(before);
    const more = cli.file(
      'legacy-2.yaml',
      'name: ap-legacy\nspec: {mode: managed, zone: us-east1-b, capacity: 6}\n',
    );
    const c = await cli(['proxies', 'apply', '-f', more]);
    expect(c, c.stderr).toMatchObject({ code: 0, stdout: 'proxy/ap-legacy configured\n' });
    expect(await stored('ap-legacy')).toMatchObject({ generation: 2, spec: { capacity: 6 } });
    // A new proxy without credentials is still refused before anything is sent.
    const fresh = cli.file('fresh.yaml', 'name: ap-fresh\nspec: {mode: managed, zone: us-east1-b}\n');
    const f = await cli(['proxies', 'apply', '-f', fresh]);
    expect(f).toMatchObject({ code: 2, stdout: '' });
    expect(f.stderr).toContain('spec.credentialsRef: required for a managed proxy without spec.cloudInit');
    expect(await stored('ap-fresh')).toBeNull();
  });
});

describe('proxyplane proxies patch', () => {
  it('sends a JSON merge patch: patched, and unchanged with no write when it changes nothing', async () => {
    const r = await cli([
      'proxies',
      'patch',
      'ap-ext',
      '-p',
      '{"capacity": 9, "attributes": {"tier": null, "zone": "z1"}}',
    ]);
    expect(r, r.stderr).toMatchObject({ code: 0, stdout: 'proxy/ap-ext patched\n' });
    const after = await stored('ap-ext');
    expect(after).toMatchObject({
      generation: 3,
      spec: { capacity: 9, attributes: { pool: 'apply', zone: 'z1' } },
    });
    const again = await cli(['proxies', 'patch', 'ap-ext', '--patch', '{"capacity": 9}']);
    expect(again, again.stderr).toMatchObject({ code: 0, stdout: 'proxy/ap-ext unchanged\n' });
    expect(await stored('ap-ext')).toEqual(after);
  });

  it('a malformed patch is bad input (exit 2, nothing sent); one the API refuses is its code (exit 1); nothing changes', async () => {
    const before = await stored('ap-ext');
    const notJson = await cli(['proxies', 'patch', 'ap-ext', '-p', '{capacity: 9']);
    expect(notJson).toMatchObject({ code: 2, stdout: '' });
    expect(notJson.stderr).toMatch(/^error: invalid_input — -p is not JSON: /);
    const notObject = await cli(['proxies', 'patch', 'ap-ext', '-p', '[{"capacity": 9}]']);
    expect(notObject).toMatchObject({ code: 2, stdout: '' });
    expect(notObject.stderr).toMatch(/^error: invalid_input — -p must be a JSON object .* got an array\n/);
    const missing = await cli(['proxies', 'patch', 'ap-ext']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/^error: usage — proxies patch needs -p /);
    const invalid = await cli(['proxies', 'patch', 'ap-ext', '-p', '{"capacity": 0}']);
    expect(invalid).toMatchObject({ code: 1, stdout: '' });
    expect(invalid.stderr).toMatch(
      /^error: invalid_request — the API refused the input: see the issues below\n {2}capacity: /,
    );
    const mode = await cli(['proxies', 'patch', 'ap-ext', '-p', '{"mode": "managed"}']);
    expect(mode).toMatchObject({ code: 1, stdout: '' });
    expect(mode.stderr).toMatch(/^error: immutable_field — /);
    expect(await stored('ap-ext')).toEqual(before);
    const unknown = await cli(['proxies', 'patch', 'ap-nope', '-p', '{"capacity": 2}']);
    expect(unknown).toMatchObject({
      code: 1,
      stderr: 'error: not_found — no such proxy: `proxyplane proxies list` shows the names\n',
    });
  });
});

describe('proxyplane proxies reconcile', () => {
  it("publishes a manual reconcile request and prints the API's answer", async () => {
    const r = await cli(['proxies', 'reconcile', 'ap-man']);
    expect(r, r.stderr).toMatchObject({
      code: 0,
      stdout: 'proxy/ap-man reconcile requested (reason: manual)\n',
    });
    await pollUntil(
      () => published,
      (list) => list.some((m) => m.proxy === 'ap-man' && m.reason === 'manual'),
      20_000,
      'the manual reconcile request of ap-man on Pub/Sub',
    );
    const j = await cli(['proxies', 'reconcile', 'ap-man', '-o', 'json']);
    expect(JSON.parse(j.stdout)).toEqual({ proxy: 'ap-man', reason: 'manual' });
  });

  it('a missing proxy is not_found with its hint (exit 1)', async () => {
    const r = await cli(['proxies', 'reconcile', 'ap-nope']);
    expect(r).toMatchObject({
      code: 1,
      stdout: '',
      stderr: 'error: not_found — no such proxy: `proxyplane proxies list` shows the names\n',
    });
  });
});

describe('a proxy being deleted', () => {
  it('refuses apply and patch with deletion_requested (exit 1), even for the spec it already has', async () => {
    expect((await cli(['proxies', 'delete', 'ap-new'])).code).toBe(0);
    const before = await stored('ap-new');
    const same = cli.file(
      'same.yaml',
      'name: ap-new\nspec: {mode: external, endpoint: {host: 127.0.0.2, port: 3128}}\n',
    );
    const r = await cli(['proxies', 'apply', '-f', same]);
    expect(r).toMatchObject({
      code: 1,
      stdout: '',
      stderr: 'error: deletion_requested — the proxy is being deleted; its spec is frozen\n',
    });
    const p = await cli(['proxies', 'patch', 'ap-new', '-p', '{"capacity": 2}']);
    expect(p).toMatchObject({
      code: 1,
      stderr: 'error: deletion_requested — the proxy is being deleted; its spec is frozen\n',
    });
    expect(await stored('ap-new')).toEqual(before);
  });
});

// `proxyplane proxies apply -f FILE | head -1`: the reader goes while the file is being applied. The CLI
// exited at the first write's EPIPE, with 0, leaving the rest of the file unwritten and nothing said.
describe('apply into a pipe whose reader has gone', () => {
  it('applies the whole file and exits with its own code, no stack trace', async () => {
    const path = cli.file(
      'piped.yaml',
      ['ap-pipe-1', 'ap-pipe-2', 'ap-pipe-3']
        .map((name) => `name: ${name}\nspec: {mode: external, endpoint: {host: 127.0.0.3, port: 3128}}\n`)
        .join('---\n'),
    );
    const child = spawn(
      process.execPath,
      [join(repoRoot, 'bin/proxyplane.mjs'), 'proxies', 'apply', '-f', path],
      {
        cwd: dir,
        env: {
          PATH: '/usr/bin:/bin',
          METADATA_SERVER_DETECTION: 'none',
          PROXYPLANE_STATE_DIR: dir,
          PROXYPLANE_API_URL: api.url,
          PROXYPLANE_ADMIN_TOKEN: ADMIN_TOKEN,
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    // The reader is gone before the CLI writes a byte.
    child.stdout.destroy();
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => {
      stderr += d;
    });
    const [code, signal] = (await once(child, 'exit')) as [number | null, NodeJS.Signals | null];
    expect({ code, signal, stderr }).toEqual({ code: 0, signal: null, stderr: '' });
    expect((await storedNames()).filter((n) => n.startsWith('ap-pipe-'))).toEqual([
      'ap-pipe-1',
      'ap-pipe-2',
      'ap-pipe-3',
    ]);
  }, 90_000);
});
