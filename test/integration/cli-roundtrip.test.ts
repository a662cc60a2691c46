// `proxyplane proxies get NAME -o yaml|json > p.yaml`, an edit, then `proxies apply -f p.yaml` (or `create
// -f`), against the API process on the Firestore and Pub/Sub emulators: the file carries the plane's own
// fields (uid, generation, createdAt, status, …), which the API still refuses in a body, and the CLI drops
// them before it sends anything, so the edit is what gets stored. A file saved before someone else's change
// writes nothing over it (its generation is the PUT's If-Match), and a field that is neither the plane's
// nor the body's is still refused. The CLI runs in this worker with a user's environment (cliInProcess),
// except the pipe through stdin, which is a real process's.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Firestore } from '@google-cloud/firestore';
import { PubSub } from '@google-cloud/pubsub';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repoRoot } from '../../shared/src/config/local-ports.js';
import { cliInProcess, cliRunner } from '../support/cli-process.js';
import { firestoreHost, testProjectId } from '../support/emulators.js';
import { ADMIN_TOKEN, type ApiProcess, startApiProcess } from '../support/leases.js';
import { storedProxy } from '../support/stored-proxy.js';

const dir = mkdtempSync(join(tmpdir(), 'cli-roundtrip-test-'));
const projectId = testProjectId('demo-cli-roundtrip');
let api: ApiProcess;
let db: Firestore;
let pubsub: PubSub;
const shell = { dir, apiUrl: () => api.url, adminToken: ADMIN_TOKEN };
const cli = cliInProcess(shell);
const cliProcess = cliRunner(shell);

const stored = (name: string) => storedProxy(db, name);

/** `proxies get NAME -o FORMAT`, as a user saves it to a file. */
async function saved(name: string, output: 'yaml' | 'json'): Promise<string> {
  const r = await cli(['proxies', 'get', name, '-o', output]);
  expect(r, r.stderr).toMatchObject({ code: 0 });
  return r.stdout;
}

beforeAll(async () => {
  db = new Firestore({ projectId, host: `${firestoreHost().host}:${firestoreHost().port}`, ssl: false });
  pubsub = new PubSub({ projectId });
  await pubsub.createTopic('reconcile-requests');
  api = await startApiProcess({ GOOGLE_CLOUD_PROJECT: projectId });
  const fleet = cli.file(
    'fleet.yaml',
    [
      'name: rt-1\nspec: {mode: external, endpoint: {host: 127.0.0.1, port: 3128}, attributes: {pool: rt}}\n',
      'name: rt-2\nspec: {mode: external, endpoint: {host: 127.0.0.2, port: 3128}, attributes: {pool: rt}}\n',
    ].join('---\n'),
  );
  const r = await cli(['proxies', 'create', '-f', fleet]);
  expect(r, r.stderr).toMatchObject({ code: 0 });
}, 120_000);

afterAll(async () => {
  await api?.stop();
  await pubsub?.close();
  await db?.terminate();
  rmSync(dir, { recursive: true, force: true });
});

describe('get -o yaml | edit | apply -f', () => {
  it('the API itself still refuses the whole `get` output as a body: the plane sets those fields', async () => {
    const res = await fetch(`${api.url}/v1/proxies/rt-1/spec`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: await saved('rt-1', 'json'),
    });
    expect(res.status).toBe(400);
    const post = await fetch(`${api.url}/v1/proxies`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: (await saved('rt-1', 'json')).replace('"name": "rt-1"', '"name": "rt-copy"'),
    });
    expect(post.status).toBe(400);
    expect(await post.json()).toMatchObject({ error: 'invalid_request' });
    expect(await stored('rt-copy')).toBeNull();
  });

  it('stores the edit of a spec field saved as YAML; the same file again converges, unchanged', async () => {
    const text = await saved('rt-1', 'yaml');
    expect(text).toMatch(/^generation: 1$/m);
    expect(text).toMatch(/^status:$/m);
    const path = cli.file('rt-1.yaml', text.replace(/^ {2}capacity: 4$/m, '  capacity: 7'));
    const r = await cli(['proxies', 'apply', '-f', path]);
    expect(r, r.stderr).toMatchObject({ code: 0, stdout: 'proxy/rt-1 configured\n', stderr: '' });
    expect(await stored('rt-1')).toMatchObject({ generation: 2, spec: { capacity: 7 } });

    // The same file again (its first answer lost, say): saved at generation 1, rt-1 is at 2 — but the
    // stored spec is the file's, so nothing of anyone's is undone: unchanged, nothing written. Saved
    // again, the same.
    const before = await stored('rt-1');
    const again = await cli(['proxies', 'apply', '-f', path]);
    expect(again, again.stderr).toMatchObject({ code: 0, stdout: 'proxy/rt-1 unchanged\n' });
    expect(await stored('rt-1')).toEqual(before);
    // (Once someone changes it, the old file is refused: the describe below.)
    const fresh = cli.file('rt-1-fresh.yaml', await saved('rt-1', 'yaml'));
    const same = await cli(['proxies', 'apply', '-f', fresh]);
    expect(same, same.stderr).toMatchObject({ code: 0, stdout: 'proxy/rt-1 unchanged\n' });
    expect(await stored('rt-1')).toEqual(before);
  });

  it('stores the edit of a spec field saved as JSON', async () => {
    const got = JSON.parse(await saved('rt-2', 'json')) as { spec: { capacity: number } };
    got.spec.capacity = 9;
    const path = cli.file('rt-2.json', JSON.stringify(got, null, 2));
    const r = await cli(['proxies', 'apply', '-f', path]);
    expect(r, r.stderr).toMatchObject({ code: 0, stdout: 'proxy/rt-2 configured\n' });
    expect(await stored('rt-2')).toMatchObject({ generation: 2, spec: { capacity: 9 } });
  });

  it('through a pipe: get -o yaml | sed | apply -f -', async () => {
    const text = (await saved('rt-2', 'yaml')).replace(/^ {4}pool: rt$/m, '    pool: rt\n    tier: gold');
    const r = await cliProcess(['proxies', 'apply', '-f', '-'], {}, text);
    expect(r, r.stderr).toMatchObject({ code: 0, stdout: 'proxy/rt-2 configured\n' });
    expect(await stored('rt-2')).toMatchObject({
      generation: 3,
      spec: { capacity: 9, attributes: { pool: 'rt', tier: 'gold' } },
    });
  });

  it('create -f of a saved proxy under a new name creates it with the saved spec', async () => {
    const text = (await saved('rt-2', 'yaml')).replace(/^name: rt-2$/m, 'name: rt-3');
    const r = await cli(['proxies', 'create', '-f', cli.file('rt-3.yaml', text)]);
    expect(r, r.stderr).toMatchObject({ code: 0, stdout: 'proxy/rt-3 created\n' });
    const [copy, original] = [await stored('rt-3'), await stored('rt-2')];
    expect(copy).toMatchObject({ generation: 1 });
    expect(copy?.spec).toEqual(original?.spec);
  });

  // docs/operations.md's quota runbook: a managed proxy saved, its zone changed with the runbook's sed
  // expression, created again (here under another name: the original stays until reconcile deletes it).
  it("the quota runbook's saved file, its zone edited, creates the proxy in the new zone", async () => {
    const made = cli.file(
      'rt-man.yaml',
      'name: rt-man\nspec: {mode: managed, zone: europe-west1-b, credentialsRef: {secret: proxy-creds}}\n',
    );
    expect((await cli(['proxies', 'create', '-f', made])).code).toBe(0);
    const runbook = readFileSync(join(repoRoot, 'docs/operations.md'), 'utf8');
    const [, from, to] = /sed -i 's\/(.*?)\/(.*?)\/' p1\.yaml/.exec(runbook) ?? [];
    expect(from, 'the sed line of docs/operations.md § Quota').toBeDefined();
    const text = (await saved('rt-man', 'yaml'))
      .replace(new RegExp(from!, 'm'), to!)
      .replace(/^name: rt-man$/m, 'name: rt-man-2');
    const r = await cli(['proxies', 'create', '-f', cli.file('p1.yaml', text)]);
    expect(r, r.stderr).toMatchObject({ code: 0, stdout: 'proxy/rt-man-2 created\n' });
    const [moved, original] = [await stored('rt-man-2'), await stored('rt-man')];
    expect(moved?.spec).toEqual({ ...original?.spec, zone: 'us-east1-b' });
  });

  it('a listing saved as YAML applies too: every proxy of it, unchanged when nothing was edited', async () => {
    const list = await cli(['proxies', 'list', '--attr', 'pool=rt', '-o', 'yaml']);
    expect(list, list.stderr).toMatchObject({ code: 0 });
    const r = await cli(['proxies', 'apply', '-f', cli.file('list.yaml', list.stdout)]);
    expect(r, r.stderr).toMatchObject({
      code: 0,
      stdout: 'proxy/rt-1 unchanged\nproxy/rt-2 unchanged\nproxy/rt-3 unchanged\n',
    });
  });
});

describe('a saved file that is stale, or has a field of neither the plane nor the body', () => {
  it('writes nothing over a change made after the file was saved (exit 1), as it says', async () => {
    const text = (await saved('rt-1', 'yaml')).replace(/^ {2}capacity: 7$/m, '  capacity: 5');
    const path = cli.file('stale.yaml', text);
    // Someone else changes rt-1 after the file was saved.
    const other = await cli(['proxies', 'patch', 'rt-1', '-p', '{"capacity": 6}']);
    expect(other, other.stderr).toMatchObject({ code: 0, stdout: 'proxy/rt-1 patched\n' });
    const before = await stored('rt-1');
    const r = await cli(['proxies', 'apply', '-f', path]);
    expect(r).toMatchObject({ code: 1, stdout: '' });
    expect(r.stderr).toMatch(
      /^error: precondition_failed — \S*stale\.yaml was saved before the stored proxy's latest change; nothing was applied — `proxies get` it again and redo the edit, or delete `generation` and `uid` from the file to apply it over the stored spec\n/,
    );
    expect(r.stderr).toContain(
      'stale.yaml: proxy/rt-1 is at generation 3, the file was saved at generation 2: its spec changed since\n',
    );
    expect(await stored('rt-1')).toEqual(before);

    // Without generation and uid, the file is applied over whatever is stored: the user's call.
    const forced = cli.file('forced.yaml', text.replace(/^(uid|generation): .*\n/gm, ''));
    const f = await cli(['proxies', 'apply', '-f', forced]);
    expect(f, f.stderr).toMatchObject({ code: 0, stdout: 'proxy/rt-1 configured\n' });
    expect(await stored('rt-1')).toMatchObject({ generation: 4, spec: { capacity: 5 } });
  });

  it("refuses a field that is neither the plane's nor the body's (exit 2), and sends nothing; a spec typo the API refuses", async () => {
    const before = [await stored('rt-1'), await stored('rt-2')];
    const typo = `${await saved('rt-1', 'yaml')}\nstauts: {phase: Ready}\n`;
    const r = await cli(['proxies', 'apply', '-f', cli.file('typo.yaml', typo)]);
    expect(r).toMatchObject({ code: 2, stdout: '' });
    expect(r.stderr).toMatch(
      /^error: invalid_input — \S*typo\.yaml is not a valid proxy definition; nothing was applied\n/,
    );
    expect(r.stderr).toContain('typo.yaml: (top level): unknown field(s) stauts\n');
    // A spec field this CLI does not know is the API's to judge (a newer API's may be real): sent, and a
    // typo refused there, 400 naming it (exit 1), with nothing written.
    const json = JSON.parse(await saved('rt-2', 'json')) as { spec: Record<string, unknown> };
    json.spec.capacty = 3;
    const s = await cli(['proxies', 'apply', '-f', cli.file('typo.json', JSON.stringify(json))]);
    expect(s).toMatchObject({ code: 1, stdout: '' });
    expect(s.stderr).toMatch(/^error: invalid_request/);
    expect(s.stderr).toContain('capacty: unknown field');
    expect([await stored('rt-1'), await stored('rt-2')]).toEqual(before);
  });
});
