import { describe, expect, it } from 'vitest';
import { ApiCallError, PartialError } from '../errors.js';
import { describeFailure } from '../hints.js';
import { yaml } from '../output.js';
import { runCli } from '../run.js';
import { cliDeps, recordingIo } from '../testing.js';
import { APPLY_ATTEMPTS, changeOf, parseMergePatch, stoppedNotes } from './apply.js';

/** A status, a JSON body, and (optionally) response headers. */
type Answer = [number, unknown, Record<string, string>?];

/** A fetch that answers `answers` in order and records "METHOD path body" (and each If-Match sent). */
function scripted(answers: Answer[]) {
  const calls: string[] = [];
  const ifMatch: string[] = [];
  const fetch = (async (url: string, init: RequestInit) => {
    const body = init.body === undefined ? '' : ` ${String(init.body)}`;
    calls.push(`${init.method} ${new URL(url).pathname}${body}`);
    const sent = (init.headers as Record<string, string> | undefined)?.['if-match'];
    if (sent !== undefined) ifMatch.push(`${init.method} ${sent}`);
    const [status, json, headers] = answers.shift() ?? [500, { error: 'internal' }];
    return new Response(JSON.stringify(json), { status, headers });
  }) as unknown as typeof globalThis.fetch;
  return { fetch, calls, ifMatch };
}

/** Every proxy's uid here: the If-Match apply sends is `"<generation>.<uid>"`, the proxy's ETag. */
const UID = '5b0c7a0e-0c3f-4b7e-9d0f-2f7b1c1d8e11';
/** The If-Match `method` sent for generation `g` (of the proxy with UID). */
const sentAt = (method: string, g: number) => `${method} "${g}.${UID}"`;

const proxy = (name: string, generation: number) => ({
  name,
  uid: UID,
  generation,
  spec: { mode: 'external', endpoint: { host: 'h.example', port: 3128 } },
  status: { phase: 'Pending', conditions: [] },
});
const notFound: Answer = [404, { error: 'not_found', message: 'proxy "x" not found' }];
/** A write the API gave up on (it may land all the same): the CLI waits Retry-After and sends it again. */
const gaveUp: Answer = [
  503,
  { error: 'unavailable', message: 'store call deadline' },
  { 'retry-after': '0' },
];
/** What the retry of a PUT or PATCH whose first try landed hears: its If-Match is a generation behind. */
const behind = (g: number): Answer => [
  412,
  { error: 'precondition_failed', message: 'moved', generation: g },
];
const withCapacity = (p: ReturnType<typeof proxy>, capacity: number) => ({
  ...p,
  spec: { ...p.spec, capacity },
});

async function run(argv: string[], answers: Answer[], file = '') {
  const io = { ...recordingIo(), readFile: async () => file, readStdin: async () => file };
  const f = scripted(answers);
  const exit = await runCli([...argv, '--api', 'http://127.0.0.1:9'], cliDeps(io, f.fetch));
  return { exit, out: io.outLines, err: io.errLines, calls: f.calls, ifMatch: f.ifMatch };
}

const two = `name: p1\nspec: {mode: external, endpoint: {host: h.example, port: 3128}}\n---\nname: p2\nspec: {mode: external, endpoint: {host: h.example, port: 3129}}\n`;

describe('changeOf', () => {
  it('is a change exactly when the generation moved (the API bumps it only when it writes a spec)', () => {
    expect(changeOf({ generation: 3 }, { generation: 3 })).toBe(false);
    expect(changeOf({ generation: 3 }, { generation: 4 })).toBe(true);
  });
});

describe('proxies apply', () => {
  it('reads every proxy first, then creates an absent one and PUTs the spec of a present one: unchanged when its generation stays', async () => {
    const r = await run(
      ['proxies', 'apply', '-f', 'fleet.yaml'],
      [notFound, [200, proxy('p2', 5)], [201, proxy('p1', 1)], [200, proxy('p2', 5)]],
      two,
    );
    expect(r).toEqual({
      exit: 0,
      out: ['proxy/p1 created', 'proxy/p2 unchanged'],
      err: [],
      ifMatch: [sentAt('PUT', 5)],
      calls: [
        'GET /v1/proxies/p1',
        'GET /v1/proxies/p2',
        'POST /v1/proxies {"name":"p1","spec":{"mode":"external","endpoint":{"host":"h.example","port":3128}}}',
        'PUT /v1/proxies/p2/spec {"mode":"external","endpoint":{"host":"h.example","port":3129}}',
      ],
    });
  });

  it('says configured when the API bumped the generation', async () => {
    const r = await run(
      ['proxies', 'apply', '-f', 'f.yaml'],
      [
        [200, proxy('p1', 2)],
        [200, proxy('p1', 3)],
      ],
      two.split('---')[0],
    );
    expect(r.out).toEqual(['proxy/p1 configured']);
  });

  it('changes a proxy that someone created between its read and its POST', async () => {
    const r = await run(
      ['proxies', 'apply', '-f', 'f.yaml'],
      [notFound, [409, { error: 'already_exists' }], [200, proxy('p1', 1)], [200, proxy('p1', 2)]],
      two.split('---')[0],
    );
    expect(r.out).toEqual(['proxy/p1 configured']);
    expect(r.calls.map((c) => c.split(' ').slice(0, 2).join(' '))).toEqual([
      'GET /v1/proxies/p1',
      'POST /v1/proxies',
      'GET /v1/proxies/p1',
      'PUT /v1/proxies/p1/spec',
    ]);
  });

  it('sends the PUT with If-Match of the generation it read', async () => {
    const r = await run(
      ['proxies', 'apply', '-f', 'f.yaml'],
      [
        [200, proxy('p1', 2)],
        [200, proxy('p1', 3)],
      ],
      two.split('---')[0],
    );
    expect(r.out).toEqual(['proxy/p1 configured']);
    expect(r.ifMatch).toEqual([sentAt('PUT', 2)]);
  });

  // The proxy changes between apply's read and its PUT: the API answers 412 and apply reads again, so its
  // verdict is about its own write. Here the other writer had already set the file's spec: unchanged.
  it('on 412 reads the proxy again and PUTs against the new generation (unchanged: the other writer set this spec)', async () => {
    const r = await run(
      ['proxies', 'apply', '-f', 'f.yaml'],
      [
        [200, proxy('p1', 2)],
        [
          412,
          { error: 'precondition_failed', message: 'proxy "p1" is at generation 3, not 2', generation: 3 },
        ],
        [200, proxy('p1', 3)],
        [200, proxy('p1', 3)],
      ],
      two.split('---')[0],
    );
    expect(r).toMatchObject({ exit: 0, out: ['proxy/p1 unchanged'], err: [] });
    expect(r.calls.map((c) => c.split(' ').slice(0, 2).join(' '))).toEqual([
      'GET /v1/proxies/p1',
      'PUT /v1/proxies/p1/spec',
      'GET /v1/proxies/p1',
      'PUT /v1/proxies/p1/spec',
    ]);
    expect(r.ifMatch).toEqual([sentAt('PUT', 2), sentAt('PUT', 3)]);
  });

  it('on 412 then a proxy gone meanwhile, creates it', async () => {
    const r = await run(
      ['proxies', 'apply', '-f', 'f.yaml'],
      [
        [200, proxy('p1', 2)],
        [412, { error: 'precondition_failed', generation: 3 }],
        notFound,
        [201, proxy('p1', 1)],
      ],
      two.split('---')[0],
    );
    expect(r).toMatchObject({ exit: 0, out: ['proxy/p1 created'] });
  });

  // The document went (its deletion completed) between apply's read and its PUT: the PUT is a 404, and the
  // proxy is created as when a read after a 412 finds nothing (docs/cli.md: "a proxy deleted meanwhile is
  // created again"), not reported as "no such proxy" by the command that creates missing proxies.
  it('on a PUT answered 404 (the proxy went since the read), creates it', async () => {
    const r = await run(
      ['proxies', 'apply', '-f', 'f.yaml'],
      [[200, proxy('p1', 2)], notFound, [201, proxy('p1', 1)]],
      two.split('---')[0],
    );
    expect(r).toMatchObject({ exit: 0, out: ['proxy/p1 created'], err: [] });
    expect(r.calls.map((c) => c.split(' ').slice(0, 2).join(' '))).toEqual([
      'GET /v1/proxies/p1',
      'PUT /v1/proxies/p1/spec',
      'POST /v1/proxies',
    ]);
  });

  it("never takes the API's catch-all 404 (a route it lacks) for a proxy gone: that error, nothing created", async () => {
    const r = await run(
      ['proxies', 'apply', '-f', 'f.yaml'],
      [
        [200, proxy('p1', 2)],
        [404, { error: 'not_found', message: 'no such route' }],
      ],
      two.split('---')[0],
    );
    expect(r.exit).toBe(1);
    expect(r.err[0]).toMatch(/^error: not_found — the API has no route \/v1\/proxies\/p1\/spec/);
    expect(r.calls).toHaveLength(2);
  });

  it(`gives up after ${APPLY_ATTEMPTS} PUTs refused with 412, with the API's code and a hint`, async () => {
    const refused = (g: number): Answer => [412, { error: 'precondition_failed', generation: g }];
    const answers: Answer[] = [[200, proxy('p1', 1)]];
    for (let g = 2; g <= APPLY_ATTEMPTS; g++) answers.push(refused(g), [200, proxy('p1', g)]);
    answers.push(refused(APPLY_ATTEMPTS + 1));
    const r = await run(['proxies', 'apply', '-f', 'f.yaml'], answers, two.split('---')[0]);
    expect(r.ifMatch).toHaveLength(APPLY_ATTEMPTS);
    expect(r).toMatchObject({
      exit: 1,
      out: [],
      err: [
        `error: precondition_failed — someone else changed the proxy since this command read it (it is now at generation ${APPLY_ATTEMPTS + 1}): run the command again`,
      ],
    });
  });

  it('on a failure part-way, prints the API error, then what was applied and what was not sent (exit 1)', async () => {
    const refused = [
      400,
      { error: 'immutable_field', issues: [{ path: 'zone', message: 'zone is immutable' }] },
    ] as Answer;
    const r = await run(
      ['proxies', 'apply', '-f', 'f.yaml'],
      [notFound, [200, proxy('p2', 1)], [201, proxy('p1', 1)], refused],
      two,
    );
    expect(r.exit).toBe(1);
    expect(r.out).toEqual(['proxy/p1 created']);
    expect(r.err).toEqual([
      expect.stringMatching(/^error: immutable_field — /),
      '  zone: zone is immutable',
      '  stopped at proxy/p2 (2 of 2): applied before it: proxy/p1 created',
    ]);
  });

  it('a one-proxy file fails with the error alone', async () => {
    const r = await run(
      ['proxies', 'apply', '-f', 'f.yaml'],
      [
        [200, { ...proxy('p1', 1), deletionRequestedAt: '2026-02-01T11:00:00Z' }],
        [409, { error: 'deletion_requested' }],
      ],
      two.split('---')[0],
    );
    expect(r).toMatchObject({
      exit: 1,
      err: ['error: deletion_requested — the proxy is being deleted; its spec is frozen'],
    });
  });

  it('checks each spec as the API does against the stored one: a host it already has is no reason to refuse', async () => {
    const legacy = {
      ...proxy('p1', 1),
      spec: { mode: 'external', endpoint: { host: 'h.example:3128', port: 3128, protocol: 'http' } },
    };
    const file = 'name: p1\nspec: {mode: external, endpoint: {host: "h.example:3128", port: 3128}}\n';
    const kept = await run(
      ['proxies', 'apply', '-f', 'f.yaml'],
      [
        [200, legacy],
        [200, legacy],
      ],
      file,
    );
    expect(kept).toMatchObject({ exit: 0, out: ['proxy/p1 unchanged'] });
    const absent = await run(['proxies', 'apply', '-f', 'f.yaml'], [notFound], file);
    expect(absent).toMatchObject({ exit: 2, calls: ['GET /v1/proxies/p1'] });
    expect(absent.err).toEqual([
      'error: invalid_input — f.yaml is not a valid proxy definition; nothing was applied',
      '  f.yaml: spec.endpoint.host: not a DNS name or an IP address (no scheme, port, credentials or zone; IPv4 as four plain decimal numbers): h.example:…',
    ]);
  });

  it('a proxy of a provider the API refuses stops the file before anything is applied', async () => {
    // The API's provider_unsupported: caught up front, not after the file's first proxy was created.
    const file = `name: p1\nspec: {mode: external, endpoint: {host: h.example, port: 3128}}\n---\nname: p2\nspec: {mode: managed, provider: aws, zone: us-central1-a, credentialsRef: {secret: s}}\n`;
    const r = await run(['proxies', 'apply', '-f', 'f.yaml'], [notFound, notFound], file);
    expect(r.exit).toBe(2);
    expect(r.calls).toEqual(['GET /v1/proxies/p1', 'GET /v1/proxies/p2']);
    expect(r.err).toEqual([
      'error: invalid_input — f.yaml is not a valid proxy definition; nothing was applied',
      "  f.yaml document 2: spec.provider: a managed proxy's provider must be gce, not aws (no adapter for it in this plane)",
    ]);
  });

  // The API's port_reserved (proxy-admin.ts): caught before p1 is created, not after.
  const onSshd = `name: p1\nspec: {mode: managed, zone: us-central1-a, credentialsRef: {secret: s}}\n---\nname: p2\nspec: {mode: managed, zone: us-central1-a, credentialsRef: {secret: s}, port: 22}\n`;

  it("a managed proxy on sshd's port stops the file before anything is applied (exit 2)", async () => {
    const r = await run(['proxies', 'apply', '-f', 'f.yaml'], [notFound, notFound], onSshd);
    expect(r.exit).toBe(2);
    expect(r.calls).toEqual(['GET /v1/proxies/p1', 'GET /v1/proxies/p2']);
    expect(r.err).toEqual([
      'error: invalid_input — f.yaml is not a valid proxy definition; nothing was applied',
      '  f.yaml document 2: spec.port: port 22 belongs to sshd, so the default cloud-init cannot run the proxy there; use another port (3128 by default), or a spec.cloudInit of your own',
    ]);
  });

  it('port 22 a managed proxy is already stored with is no reason to refuse the file, as the API does not', async () => {
    const managed = (name: string, generation: number, port: number) => ({
      ...proxy(name, generation),
      spec: { mode: 'managed', zone: 'us-central1-a', credentialsRef: { secret: 's' }, port },
    });
    const r = await run(
      ['proxies', 'apply', '-f', 'f.yaml'],
      [
        [200, managed('p1', 2, 3128)],
        [200, managed('p2', 7, 22)],
        [200, managed('p1', 2, 3128)],
        [200, managed('p2', 7, 22)],
      ],
      onSshd,
    );
    expect(r).toMatchObject({ exit: 0, out: ['proxy/p1 unchanged', 'proxy/p2 unchanged'], err: [] });
    // Stored on another port, or with a cloud-init of its own: moving it to 22 is refused.
    for (const stored of [
      managed('p2', 7, 3128),
      { ...managed('p2', 7, 22), spec: { ...managed('p2', 7, 22).spec, cloudInit: { inline: 'x' } } },
    ]) {
      const moved = await run(
        ['proxies', 'apply', '-f', 'f.yaml'],
        [
          [200, managed('p1', 2, 3128)],
          [200, stored],
        ],
        onSshd,
      );
      expect(moved).toMatchObject({ exit: 2, calls: ['GET /v1/proxies/p1', 'GET /v1/proxies/p2'] });
      expect(moved.err[1]).toMatch(/^ {2}f\.yaml document 2: spec\.port: port 22 belongs to sshd/);
    }
  });

  it('a bad file sends nothing (exit 2)', async () => {
    const r = await run(
      ['proxies', 'apply', '-f', 'f.yaml'],
      [],
      'name: p1\nspec: {mode: managed, zone: mars}\n',
    );
    expect(r.exit).toBe(2);
    expect(r.err[0]).toBe(
      'error: invalid_input — f.yaml is not a valid proxy definition; nothing was applied',
    );
    expect(r.calls).toEqual([]);
  });

  it('needs -f, and takes no argument', async () => {
    expect((await run(['proxies', 'apply'], [])).err[0]).toMatch(
      /^error: usage — proxies apply needs -f FILE/,
    );
    expect((await run(['proxies', 'apply', 'p1', '-f', 'x'], [])).exit).toBe(2);
  });
});

// The API answers 503 when it gave a write up at its deadline, and such a write may land all the same: the
// CLI's retry then hears 409 already_exists (a POST) or 412 (a PUT, a PATCH), reads again and finds its own
// change. It says what the command did — created, configured, patched — not "unchanged".
describe('a write answered 503 that landed all the same', () => {
  const file = `name: p1\nspec: {mode: external, endpoint: {host: h.example, port: 3128}, capacity: 8}\n`;
  const mine = withCapacity(proxy('p1', 4), 8);

  it('apply of an absent proxy: created, not unchanged', async () => {
    const r = await run(
      ['proxies', 'apply', '-f', 'p.yaml'],
      [
        notFound,
        gaveUp,
        [409, { error: 'already_exists', message: 'exists' }],
        [200, withCapacity(proxy('p1', 1), 8)],
        [200, withCapacity(proxy('p1', 1), 8)],
      ],
      file,
    );
    expect(r).toMatchObject({ exit: 0, out: ['proxy/p1 created'], err: [] });
  });

  it('apply over a stored proxy: configured, not unchanged', async () => {
    const r = await run(
      ['proxies', 'apply', '-f', 'p.yaml'],
      [[200, proxy('p1', 3)], gaveUp, behind(4), [200, mine], [200, mine]],
      file,
    );
    expect(r).toMatchObject({
      exit: 0,
      out: ['proxy/p1 configured'],
      err: [],
      ifMatch: [sentAt('PUT', 3), sentAt('PUT', 3), sentAt('PUT', 4)],
    });
  });

  it('the proxy deleted and made again meanwhile (another uid), with the same spec: unchanged', async () => {
    const remade = { ...mine, uid: '0f6a8d52-6a4e-4c11-8c57-3d1a2b9e7f00' };
    const r = await run(
      ['proxies', 'apply', '-f', 'p.yaml'],
      [[200, proxy('p1', 3)], gaveUp, behind(4), [200, remade], [200, remade]],
      file,
    );
    expect(r).toMatchObject({ exit: 0, out: ['proxy/p1 unchanged'], err: [] });
  });

  it('a saved file: configured; refused as stale when changed again meanwhile, saying it may have landed', async () => {
    const savedAt3 = `name: p1\nuid: ${UID}\ngeneration: 3\nspec: {mode: external, endpoint: {host: h.example, port: 3128}, capacity: 8}\n`;
    const configured = await run(
      ['proxies', 'apply', '-f', 'p.yaml'],
      [[200, proxy('p1', 3)], gaveUp, behind(4), [200, mine], [200, mine]],
      savedAt3,
    );
    expect(configured).toMatchObject({ exit: 0, out: ['proxy/p1 configured'], err: [] });
    const changedAgain = withCapacity(proxy('p1', 5), 9);
    const refused = await run(
      ['proxies', 'apply', '-f', 'p.yaml'],
      [[200, proxy('p1', 3)], gaveUp, behind(5), [200, changedAgain]],
      savedAt3,
    );
    expect(refused.exit).toBe(1);
    expect(refused.err).toContain(
      "  proxy/p1: this apply's first attempt (answered 503) may have been applied before that change",
    );
  });

  it('a plain 412 (no 503 before it) is another writer: unchanged when it had set the same', async () => {
    const r = await run(
      ['proxies', 'apply', '-f', 'p.yaml'],
      [[200, proxy('p1', 3)], behind(4), [200, mine], [200, mine]],
      file,
    );
    expect(r).toMatchObject({ exit: 0, out: ['proxy/p1 unchanged'], err: [] });
  });

  it('patch and cordon: patched, cordoned — not unchanged, already cordoned', async () => {
    const patched = await run(
      ['proxies', 'patch', 'p1', '-p', '{"capacity":8}'],
      [[200, proxy('p1', 3)], gaveUp, behind(4), [200, mine], [200, mine]],
    );
    expect(patched).toMatchObject({ exit: 0, out: ['proxy/p1 patched'], err: [] });
    const cordoned = await run(
      ['proxies', 'cordon', 'p1'],
      [[200, proxy('p1', 3)], gaveUp, behind(4), [200, proxy('p1', 4)], [200, proxy('p1', 4)]],
    );
    expect(cordoned.out[0]).toMatch(/^proxy\/p1 cordoned: no new leases/);
    // The proxy deleted and made again meanwhile (another uid): its generation says nothing of this write.
    const remade = { ...proxy('p1', 1), uid: '0f6a8d52-6a4e-4c11-8c57-3d1a2b9e7f00' };
    const other = await run(
      ['proxies', 'cordon', 'p1'],
      [[200, proxy('p1', 3)], gaveUp, behind(4), [200, remade], [200, remade]],
    );
    expect(other.out).toEqual(['proxy/p1 already cordoned']);
  });
});

// A file saved from `proxies get NAME -o yaml` and edited: sent as its name and spec only (the API refuses
// the plane's fields), and written only over the proxy and generation it was saved from.
describe("proxies apply of a file saved from the API's output", () => {
  const uid = UID;
  const stored = (name: string, generation: number, id = uid) => ({
    ...proxy(name, generation),
    uid: id,
    createdAt: '2026-02-01T12:00:00.000Z',
    deletionRequestedAt: null,
  });
  /** What `get -o yaml` printed at `generation`, with capacity edited to 8. */
  const saved = (name: string, generation: number) => {
    const p = stored(name, generation);
    return yaml({ ...p, spec: { ...p.spec, capacity: 8 } });
  };
  const edited = '{"mode":"external","endpoint":{"host":"h.example","port":3128},"capacity":8}';

  it('PUTs only the spec, If-Match the generation it was saved at', async () => {
    const r = await run(
      ['proxies', 'apply', '-f', 'p.yaml'],
      [
        [200, stored('p1', 3)],
        [200, stored('p1', 4)],
      ],
      saved('p1', 3),
    );
    expect(r).toEqual({
      exit: 0,
      out: ['proxy/p1 configured'],
      err: [],
      ifMatch: [sentAt('PUT', 3)],
      calls: ['GET /v1/proxies/p1', `PUT /v1/proxies/p1/spec ${edited}`],
    });
  });

  // Deleted since the file was saved: applying the edit must not undo the deletion (a new VM, leasable at
  // once) — not even for the other proxies of a saved listing. `create -f` is the way to do it on purpose.
  it('writes nothing when a proxy of the file was deleted since it was saved (exit 1)', async () => {
    const file = `${saved('p1', 3)}\n---\n${saved('p2', 2)}`;
    const r = await run(['proxies', 'apply', '-f', 'p.yaml'], [[200, stored('p1', 3)], notFound], file);
    expect(r).toEqual({
      exit: 1,
      out: [],
      err: [
        "error: precondition_failed — p.yaml was saved before the stored proxy's latest change; nothing was applied — `proxies get` it again and redo the edit, or delete `generation` and `uid` from the file to apply it over the stored spec",
        '  p.yaml document 2: proxy/p2 does not exist: deleted since the file was saved, or renamed in it? `proxies create -f` the file to create it',
      ],
      ifMatch: [],
      calls: ['GET /v1/proxies/p1', 'GET /v1/proxies/p2'],
    });
  });

  it('is not created again when its deletion completes between the read and the PUT', async () => {
    const r = await run(
      ['proxies', 'apply', '-f', 'p.yaml'],
      [[200, stored('p1', 3)], notFound],
      saved('p1', 3),
    );
    expect(r).toMatchObject({ exit: 1, out: [], ifMatch: [sentAt('PUT', 3)] });
    expect(r.calls.map((c) => c.split(' ').slice(0, 2).join(' '))).toEqual([
      'GET /v1/proxies/p1',
      'PUT /v1/proxies/p1/spec',
    ]);
    expect(r.err[1]).toBe(
      '  proxy/p1 does not exist: deleted since the file was saved, or renamed in it? `proxies create -f` the file to create it',
    );
  });

  it('create -f of the same saved file creates it, with its name and spec only', async () => {
    const r = await run(['proxies', 'create', '-f', 'p.yaml'], [[201, stored('p1', 1)]], saved('p1', 3));
    expect(r).toMatchObject({ exit: 0, out: ['proxy/p1 created'] });
    expect(r.calls).toEqual([`POST /v1/proxies {"name":"p1","spec":${edited}}`]);
  });

  it('writes nothing when a proxy of the file changed since it was saved (exit 1), not even the others', async () => {
    const file = `${saved('p1', 3)}\n---\n${saved('p2', 2)}`;
    const r = await run(
      ['proxies', 'apply', '-f', 'p.yaml'],
      [
        [200, stored('p1', 3)],
        [200, stored('p2', 4)],
      ],
      file,
    );
    expect(r).toEqual({
      exit: 1,
      out: [],
      err: [
        "error: precondition_failed — p.yaml was saved before the stored proxy's latest change; nothing was applied — `proxies get` it again and redo the edit, or delete `generation` and `uid` from the file to apply it over the stored spec",
        '  p.yaml document 2: proxy/p2 is at generation 4, the file was saved at generation 2: its spec changed since',
      ],
      ifMatch: [],
      calls: ['GET /v1/proxies/p1', 'GET /v1/proxies/p2'],
    });
  });

  it('writes nothing over another proxy of the same name (deleted and created again since)', async () => {
    const other = '00000000-0000-4000-8000-000000000001';
    const r = await run(
      ['proxies', 'apply', '-f', 'p.yaml'],
      [[200, stored('p1', 3, other)]],
      saved('p1', 3),
    );
    expect(r).toMatchObject({ exit: 1, out: [], calls: ['GET /v1/proxies/p1'] });
    expect(r.err[1]).toBe(
      `  p.yaml: proxy/p1 is not the proxy the file was saved from (uid ${other}, the file's ${uid}): deleted and created again since?`,
    );
  });

  // Changed between apply's read and its PUT: the API's 412, then the read again shows the change. Not
  // sent again over it, as a hand-written file would be: the change came after the file was saved.
  it('on 412 reads again and stops: the change since is not written over', async () => {
    const r = await run(
      ['proxies', 'apply', '-f', 'p.yaml'],
      [
        [200, stored('p1', 3)],
        [412, { error: 'precondition_failed', generation: 4 }],
        [200, stored('p1', 4)],
      ],
      saved('p1', 3),
    );
    expect(r).toMatchObject({ exit: 1, out: [], ifMatch: [sentAt('PUT', 3)] });
    expect(r.calls.map((c) => c.split(' ').slice(0, 2).join(' '))).toEqual([
      'GET /v1/proxies/p1',
      'PUT /v1/proxies/p1/spec',
      'GET /v1/proxies/p1',
    ]);
    expect(r.err).toEqual([
      expect.stringMatching(
        /^error: precondition_failed — p\.yaml was saved before the stored proxy's latest change; not applied — /,
      ),
      '  proxy/p1 is at generation 4, the file was saved at generation 3: its spec changed since',
    ]);
  });

  // Its first apply landed but the answer was lost (or landed late, after this run's read: a plain 412):
  // applied again it finds its own spec stored, a generation on — the file's, so nothing to refuse and
  // nothing to write. (A 503 and then the 412 within one run: configured, below.)
  it('applied again once its spec is stored, it converges: unchanged, not refused as stale', async () => {
    const landed = { ...stored('p1', 4), spec: { ...stored('p1', 4).spec, capacity: 8 } };
    const again = await run(
      ['proxies', 'apply', '-f', 'p.yaml'],
      [
        [200, landed],
        [200, landed],
      ],
      saved('p1', 3),
    );
    expect(again).toMatchObject({
      exit: 0,
      out: ['proxy/p1 unchanged'],
      err: [],
      ifMatch: [sentAt('PUT', 4)],
    });

    const retried = await run(
      ['proxies', 'apply', '-f', 'p.yaml'],
      [
        [200, stored('p1', 3)],
        [412, { error: 'precondition_failed', generation: 4 }],
        [200, landed],
        [200, landed],
      ],
      saved('p1', 3),
    );
    expect(retried).toMatchObject({ exit: 0, out: ['proxy/p1 unchanged'], err: [] });
  });

  it('a file without uid and generation applies over whatever is stored, as before', async () => {
    const r = await run(
      ['proxies', 'apply', '-f', 'p.yaml'],
      [
        [200, stored('p1', 9)],
        [200, stored('p1', 10)],
      ],
      `name: p1\nspec: ${edited}\n`,
    );
    expect(r).toMatchObject({ exit: 0, out: ['proxy/p1 configured'], ifMatch: [sentAt('PUT', 9)] });
  });
});

// An older CLI refused a file a newer API printed: its local check knew only the spec fields of its own
// release. A spec field it does not know is now sent as written, for the API to take or refuse.
describe('proxies apply of a spec field this CLI does not know', () => {
  const withField = (field: string) =>
    `name: p1\nspec: {mode: external, endpoint: {host: h.example, port: 3128}, ${field}: 8}\n`;

  it('PUTs it unchanged: an API that knows it takes it', async () => {
    const r = await run(
      ['proxies', 'apply', '-f', 'f.yaml'],
      [
        [200, proxy('p1', 5)],
        [200, proxy('p1', 6)],
      ],
      withField('warmPool'),
    );
    expect(r).toMatchObject({ exit: 0, out: ['proxy/p1 configured'], err: [] });
    expect(r.calls[1]).toBe(
      'PUT /v1/proxies/p1/spec {"mode":"external","endpoint":{"host":"h.example","port":3128},"warmPool":8}',
    );
  });

  it("a typo is the API's 400 naming the field: exit 1, its issue printed", async () => {
    const refused: Answer = [
      400,
      {
        error: 'invalid_request',
        message: 'invalid spec',
        issues: [{ path: 'capacty', code: 'unrecognized_key', message: 'unknown field' }],
      },
    ];
    const r = await run(
      ['proxies', 'apply', '-f', 'f.yaml'],
      [[200, proxy('p1', 5)], refused],
      withField('capacty'),
    );
    expect(r).toMatchObject({
      exit: 1,
      out: [],
      err: [
        expect.stringMatching(/^error: invalid_request — the API refused the input/),
        '  capacty: unknown field',
      ],
    });
    expect(r.calls).toHaveLength(2);
  });
});

describe('stoppedNotes', () => {
  it('names what was done before the failure and what was never sent', () => {
    expect(stoppedNotes(['a', 'b', 'c', 'd'], 2, ['created', 'unchanged'])).toEqual([
      'stopped at proxy/c (3 of 4): applied before it: proxy/a created, proxy/b unchanged; not sent: proxy/d',
    ]);
    expect(stoppedNotes(['a', 'b'], 0, [])).toEqual([
      'stopped at proxy/a (1 of 2): nothing applied before it; not sent: proxy/b',
    ]);
  });

  it('come after the failure’s own lines, with its exit code', () => {
    const failure = new ApiCallError(409, 'conflict', { error: 'conflict' }, '/v1/proxies/b/spec');
    expect(describeFailure(new PartialError(failure, ['stopped at proxy/b (2 of 2): …']))).toEqual({
      lines: [
        'error: conflict — someone else kept changing the same proxy: run the command again',
        '  stopped at proxy/b (2 of 2): …',
      ],
      exitCode: 1,
    });
  });
});

describe('not_found on a proxy’s sub-routes', () => {
  it('is "no such proxy", unless the API says it has no such route', () => {
    const hint = (path: string, message: string) =>
      describeFailure(new ApiCallError(404, 'not_found', { error: 'not_found', message }, path)).lines[0];
    expect(hint('/v1/proxies/p1/reconcile', 'proxy "p1" not found')).toMatch(/no such proxy/);
    expect(hint('/v1/proxies/p1/spec', 'proxy "p1" not found')).toMatch(/no such proxy/);
    expect(hint('/v1/proxies/p1/reconcile', 'no such route')).toMatch(
      /has no route \/v1\/proxies\/p1\/reconcile/,
    );
  });
});

describe('parseMergePatch', () => {
  it('takes a JSON object', () => {
    expect(parseMergePatch('{"capacity": 8, "attributes": {"old": null}}')).toEqual({
      capacity: 8,
      attributes: { old: null },
    });
  });

  it.each([
    ['{capacity: 8}', /^-p is not JSON: /],
    ['', /^-p is not JSON: /],
    ['[1]', /got an array$/],
    ['null', /got null$/],
    ['8', /got number$/],
    ['"x"', /got string$/],
    // JSON.parse would send {"capacity":500}; the API refuses it (duplicate_key), so it is not sent.
    ['{"capacity":1,"capacity":500}', /^-p repeats the key capacity in one object/],
    ['{"attributes":{"pool":"a","p\\u006fol":"b"}}', /^-p repeats the key attributes\.pool in one object/],
  ])('refuses %j', (raw, message) => {
    expect(() => parseMergePatch(raw)).toThrow(message);
  });

  it('takes the same key in sibling objects, or inside a string', () => {
    expect(parseMergePatch('{"a":{"k":1},"b":{"k":2},"c":"\\"c\\":1"}')).toEqual({
      a: { k: 1 },
      b: { k: 2 },
      c: '"c":1',
    });
  });

  it('does not quote the text around the fault: a mistyped secret stays off stderr', () => {
    expect(() => parseMergePatch('{"endpoint":{"host":alice:s3cret@p.example}}')).toThrow(
      /^-p is not JSON: Unexpected token 'a'$/,
    );
  });
});

describe('proxies patch', () => {
  it('reads the generation, PATCHes, and says patched or unchanged', async () => {
    const changed = await run(
      ['proxies', 'patch', 'p1', '-p', '{"capacity":8}'],
      [
        [200, proxy('p1', 1)],
        [200, proxy('p1', 2)],
      ],
    );
    expect(changed).toMatchObject({
      exit: 0,
      out: ['proxy/p1 patched'],
      calls: ['GET /v1/proxies/p1', 'PATCH /v1/proxies/p1/spec {"capacity":8}'],
    });
    const same = await run(
      ['proxies', 'patch', 'p1', '-p', '{}'],
      [
        [200, proxy('p1', 2)],
        [200, proxy('p1', 2)],
      ],
    );
    expect(same.out).toEqual(['proxy/p1 unchanged']);
  });

  it('sends nothing for a malformed patch (exit 2)', async () => {
    const r = await run(['proxies', 'patch', 'p1', '-p', '{"capacity":'], []);
    expect(r).toMatchObject({ exit: 2, calls: [] });
    expect(r.err[0]).toMatch(/^error: invalid_input — -p is not JSON/);
  });

  it('sends nothing for a patch with a repeated key (exit 2), which JSON.parse would read as its last', async () => {
    const r = await run(['proxies', 'patch', 'p1', '-p', '{"capacity":1,"capacity":500}'], []);
    expect(r).toMatchObject({ exit: 2, calls: [] });
    expect(r.err[0]).toMatch(/^error: invalid_input — -p repeats the key capacity in one object/);
  });
});

describe('proxies cordon and uncordon', () => {
  it('PATCH the spec’s cordoned under If-Match, and say so; already so when the generation stayed', async () => {
    const cordoned = await run(
      ['proxies', 'cordon', 'p1'],
      [
        [200, proxy('p1', 3)],
        [200, proxy('p1', 4)],
      ],
    );
    expect(cordoned).toMatchObject({
      exit: 0,
      calls: ['GET /v1/proxies/p1', 'PATCH /v1/proxies/p1/spec {"cordoned":true}'],
      ifMatch: [sentAt('PATCH', 3)],
    });
    expect(cordoned.out[0]).toMatch(/^proxy\/p1 cordoned: no new leases/);
    const again = await run(
      ['proxies', 'cordon', 'p1'],
      [
        [200, proxy('p1', 4)],
        [200, proxy('p1', 4)],
      ],
    );
    expect(again.out).toEqual(['proxy/p1 already cordoned']);
    const uncordoned = await run(
      ['proxies', 'uncordon', 'p1'],
      [
        [200, proxy('p1', 4)],
        [200, proxy('p1', 5)],
      ],
    );
    expect(uncordoned).toMatchObject({
      exit: 0,
      out: ['proxy/p1 uncordoned'],
      calls: ['GET /v1/proxies/p1', 'PATCH /v1/proxies/p1/spec {"cordoned":false}'],
    });
  });

  it('refuses a name the API would refuse, sending nothing (exit 2)', async () => {
    const r = await run(['proxies', 'cordon', 'Not_A_Label'], []);
    expect(r).toMatchObject({ exit: 2, calls: [] });
  });
});

describe('proxies reconcile', () => {
  it('POSTs without a body and prints the answer', async () => {
    const r = await run(['proxies', 'reconcile', 'p1'], [[202, { proxy: 'p1', reason: 'manual' }]]);
    expect(r).toEqual({
      exit: 0,
      out: ['proxy/p1 reconcile requested (reason: manual)'],
      err: [],
      calls: ['POST /v1/proxies/p1/reconcile'],
      ifMatch: [],
    });
  });
});

describe('proxies patch under concurrent writers', () => {
  it('sends the PATCH with If-Match of the generation it read: patched when the API bumped it', async () => {
    const r = await run(
      ['proxies', 'patch', 'p1', '-p', '{"capacity": 8}'],
      [
        [200, proxy('p1', 3)],
        [200, proxy('p1', 4)],
      ],
    );
    expect(r).toMatchObject({ exit: 0, out: ['proxy/p1 patched'], ifMatch: [sentAt('PATCH', 3)] });
  });

  it('on 412 reads again and patches against the new generation: unchanged when the other writer had set the same', async () => {
    const r = await run(
      ['proxies', 'patch', 'p1', '-p', '{"capacity": 8}'],
      [
        [200, proxy('p1', 3)],
        [
          412,
          { error: 'precondition_failed', message: 'proxy "p1" is at generation 4, not 3', generation: 4 },
        ],
        [200, proxy('p1', 4)],
        [200, proxy('p1', 4)],
      ],
    );
    expect(r).toMatchObject({
      exit: 0,
      out: ['proxy/p1 unchanged'],
      ifMatch: [sentAt('PATCH', 3), sentAt('PATCH', 4)],
    });
  });

  it(`gives up after ${APPLY_ATTEMPTS} PATCHes refused with 412 (exit 1)`, async () => {
    const refused: Answer = [412, { error: 'precondition_failed', message: 'moved', generation: 9 }];
    const answers: Answer[] = [];
    for (let i = 0; i < APPLY_ATTEMPTS; i++) answers.push([200, proxy('p1', i + 1)], refused);
    const r = await run(['proxies', 'patch', 'p1', '-p', '{"capacity": 8}'], answers);
    expect(r.exit).toBe(1);
    expect(r.ifMatch).toHaveLength(APPLY_ATTEMPTS);
    expect(r.err[0]).toMatch(/^error: precondition_failed/);
  });
});
