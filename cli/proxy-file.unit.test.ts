import { describe, expect, it } from 'vitest';
import { InputError } from './errors.js';
import { MAX_INPUT_BYTES } from './input-file.js';
import { json, yaml } from './output.js';
import { parseProxyFile } from './proxy-file.js';

const managed =
  'name: edge-1\nspec:\n  mode: managed\n  zone: us-central1-a\n  credentialsRef: {secret: proxy-creds}\n';

function problems(text: string): string[] {
  try {
    parseProxyFile(text, 'p.yaml');
  } catch (err) {
    if (err instanceof InputError) return [err.message, ...err.details];
    throw err;
  }
  throw new Error('expected an InputError');
}

describe('parseProxyFile', () => {
  it.each([
    ['one YAML proxy', managed, ['edge-1']],
    ['JSON', '{"name":"x-1","spec":{"mode":"external","endpoint":{"host":"h","port":3128}}}', ['x-1']],
    [
      'an external SOCKS5 proxy',
      'name: res-1\nspec: {mode: external, endpoint: {host: r.example, port: 1080, protocol: socks5}}\n',
      ['res-1'],
    ],
    [
      'a YAML list',
      `- ${managed.replace(/\n/g, '\n  ').trimEnd()}\n- name: edge-2\n  spec: {mode: managed, zone: us-east1-b, credentialsRef: {secret: c}}\n`,
      ['edge-1', 'edge-2'],
    ],
    [
      'several documents',
      `${managed}---\nname: edge-3\nspec: {mode: managed, zone: us-east1-b, credentialsRef: {secret: c}}\n`,
      ['edge-1', 'edge-3'],
    ],
  ])('reads %s', (_, text, names) => {
    expect(parseProxyFile(text, 'p.yaml').map((p) => p.name)).toEqual(names);
  });

  it("refuses a field that is neither the plane's nor the body's, beside the plane's too: a typo is never dropped", () => {
    const got = `${managed}uid: 5b0c7a0e-0c3f-4b7e-9d0f-2f7b1c1d8e11\ngeneration: 3\nstatus: {phase: Ready}\n`;
    expect(problems(`${got}colour: red\n`)[1]).toBe('p.yaml: (top level): unknown field(s) colour');
    expect(problems(`${managed}generaton: 3\n`)[1]).toBe('p.yaml: (top level): unknown field(s) generaton');
    // Only at the top: a spec's `status` is the spec's, sent for the API to judge (it refuses it).
    expect(parseProxyFile(`${managed}  status: x\n`, 'p.yaml')[0]!.body.spec).toMatchObject({ status: 'x' });
  });

  // An older CLI refused a file a newer API printed (`proxies get X -o yaml > f; proxies apply -f f`):
  // "spec: unknown field(s) <field>" for a spec field added since. The spec is sent as written and the API
  // checks it whole (a typo is its 400 invalid_request, naming the field), so a field this CLI does not
  // know goes through; those it knows are still checked here.
  it('lets a spec field it does not know through, sent as written, at any depth of the spec', () => {
    const newer = `${managed}  warmPool: {size: 2}\n  healthCheck: {url: "http://t.example/", jitter: 3}\n`;
    const [p] = parseProxyFile(newer, 'p.yaml');
    expect(p!.body.spec).toEqual({
      mode: 'managed',
      zone: 'us-central1-a',
      credentialsRef: { secret: 'proxy-creds' },
      warmPool: { size: 2 },
      healthCheck: { url: 'http://t.example/', jitter: 3 },
    });
    // Read with the defaults of the fields it knows, for the checks that need them.
    expect(p!.spec).toMatchObject({
      capacity: 4,
      healthCheck: { url: 'http://t.example/', intervalSeconds: 30 },
    });
    const external = 'name: x-1\nspec: {mode: external, endpoint: {host: h, port: 3128, sni: s.example}}\n';
    expect(parseProxyFile(external, 'p.yaml')[0]!.body.spec).toMatchObject({
      endpoint: { sni: 's.example' },
    });
  });

  it('still checks the spec fields it knows beside one it does not', () => {
    const text = `${managed}  warmPool: {size: 2}\n  capacity: eight\n  healthCheck: {intervalSeconds: 0, jitter: 3}\n`;
    expect(problems(text).slice(1)).toEqual([
      'p.yaml: spec.capacity: Invalid input: expected number, received string',
      'p.yaml: spec.healthCheck.intervalSeconds: Too small: expected number to be >=1',
    ]);
    expect(problems(managed.replace('us-central1-a', 'moon') + '  warmPool: 1\n').join('\n')).toMatch(
      /spec\.zone: a GCE zone/,
    );
  });

  it('keeps the body as written: the API applies the defaults', () => {
    expect(parseProxyFile(managed, 'p.yaml')[0]!.body).toEqual({
      name: 'edge-1',
      spec: { mode: 'managed', zone: 'us-central1-a', credentialsRef: { secret: 'proxy-creds' } },
    });
  });

  it.each([
    ['not YAML', 'name: [unclosed', /not valid YAML or JSON: line 1/],
    ['empty', '', /holds no proxy/],
    ['a bad name', managed.replace('edge-1', 'Edge_1'), /name: must be a DNS label/],
    ['a bad zone', managed.replace('us-central1-a', 'moon'), /spec\.zone: a GCE zone/],
    ['a misspelt plane field', `${managed}creationTimestamp: x\n`, /unknown field\(s\) creationTimestamp/],
    [
      'a generation that is not a number',
      `${managed}generation: "3"\n`,
      /^p\.yaml: generation: the generation `proxies get` printed/m,
    ],
    [
      'a generation below 1',
      `${managed}generation: 0\n`,
      /^p\.yaml: generation: the generation `proxies get` printed \(1 or more\)/m,
    ],
    [
      'a fractional generation',
      `${managed}generation: 1.5\n`,
      /^p\.yaml: generation: the generation `proxies get` printed \(a whole number\)/m,
    ],
    ['an empty uid', `${managed}uid: ""\n`, /^p\.yaml: uid: the uid `proxies get` printed/m],
    [
      'a listing with a field a listing has not',
      'proxies: []\ncount: 0\ncolor: red\n',
      /\(top level\): unknown field\(s\) proxies, count, color/,
    ],
    ['a duplicate name', `${managed}---\n${managed}`, /"edge-1" appears twice/],
    ['a duplicate key', `${managed}name: again\n`, /not valid YAML or JSON/],
    ['an alias bomb', 'a: &a [x, x]\nb: [*a, *a]\n', /not valid YAML or JSON|Excessive alias/],
    // The API's refusals that need only the spec: caught before anything is sent (the other proxies of
    // the file would otherwise be created before the API refuses this one).
    [
      'a managed proxy that could never boot',
      managed.replace('  credentialsRef: {secret: proxy-creds}\n', ''),
      /spec\.credentialsRef: required for a managed proxy without spec\.cloudInit/,
    ],
    [
      "a managed proxy on sshd's port with the default cloud-init",
      `${managed}  port: 22\n`,
      /^p\.yaml: spec\.port: port 22 belongs to sshd, so the default cloud-init cannot run the proxy there; use another port \(3128 by default\), or a spec\.cloudInit of your own$/m,
    ],
    [
      'a managed proxy of a provider the plane has no adapter for',
      `${managed}  provider: aws\n`,
      /spec\.provider: a managed proxy's provider must be gce, not aws/,
    ],
    [
      'a managed proxy asking for SOCKS5',
      `${managed}  protocol: socks5\n`,
      /spec\.protocol: a managed proxy speaks http only, not socks5/,
    ],
    [
      'an endpoint of an unknown protocol',
      'name: x-1\nspec: {mode: external, endpoint: {host: h, port: 1080, protocol: socks4}}\n',
      /spec\.endpoint\.protocol: /,
    ],
    [
      'an endpoint host with credentials in it, without showing them',
      'name: x-1\nspec: {mode: external, endpoint: {host: "alice:s3cret@h.example", port: 3128}}\n',
      /spec\.endpoint\.host: not a DNS name or an IP address \(no scheme, port, credentials or zone; IPv4 as four plain decimal numbers\): …@h\.example$/m,
    ],
    [
      "an endpoint host pasted as a provider's host:port:user:password line, without the password",
      'name: x-1\nspec: {mode: external, endpoint: {host: "h.example:3128:alice:s3cret", port: 3128}}\n',
      /spec\.endpoint\.host: not a DNS name or an IP address \(no scheme, port, credentials or zone; IPv4 as four plain decimal numbers\): h\.example:…$/m,
    ],
    [
      'an endpoint host with a port in it',
      'name: x-1\nspec: {mode: external, endpoint: {host: "h.example:3128", port: 3128}}\n',
      /spec\.endpoint\.host: not a DNS name or an IP address \(no scheme, port, credentials or zone; IPv4 as four plain decimal numbers\): h\.example:…$/m,
    ],
    [
      'a health-check URL with credentials in it, without showing them',
      `${managed}  healthCheck: {url: "http://alice:s3cret@target.example/"}\n`,
      /spec\.healthCheck\.url: must not carry credentials \(user:password@\)$/m,
    ],
  ])('refuses %s, saying where', (_, text, pattern) => {
    expect(problems(text).join('\n')).toMatch(pattern);
  });

  it("lets port 22 through where the API does: a cloud-init of the proxy's own, an external endpoint", () => {
    const own = `${managed}  port: 22\n  cloudInit: {inline: "#cloud-config"}\n`;
    expect(parseProxyFile(own, 'p.yaml')[0]!.spec).toMatchObject({ port: 22 });
    const external = 'name: x-1\nspec: {mode: external, endpoint: {host: h.example, port: 22}}\n';
    expect(parseProxyFile(external, 'p.yaml')).toHaveLength(1);
  });

  it.each([
    ['alice:s3cret@h.example'],
    // A line break before the @: the cut runs across it.
    ['alice:s3cret\\nmore@h.example'],
  ])('never repeats the password of an endpoint host that carries one: %s', (host) => {
    const text = `name: x-1\nspec: {mode: external, endpoint: {host: "${host}", port: 3128}}\n`;
    expect(problems(text).join('\n')).not.toMatch(/s3cret|alice/);
  });

  it.each([
    ['p.example.com,3128,alice,s3cret', 'p.example.com,…'],
    ['p.example.com;3128;alice;s3cret', 'p.example.com;…'],
    ['p.example.com|3128|alice|s3cret', 'p.example.com|…'],
    ['p.example.com\\talice\\ts3cret', 'p.example.com\t…'],
    ['p.example.com alice s3cret', 'p.example.com …'],
  ])("quotes a provider's line pasted as the host only up to the host: %j", (host, quoted) => {
    const text = `name: x-1\nspec: {mode: external, endpoint: {host: "${host}", port: 3128}}\n`;
    const printed = problems(text).join('\n');
    expect(printed).toContain(
      `spec.endpoint.host: not a DNS name or an IP address (no scheme, port, credentials or zone; IPv4 as four plain decimal numbers): ${quoted}`,
    );
    expect(printed).not.toMatch(/s3cret|alice/);
  });

  it('never repeats the password of a health-check URL that carries one', () => {
    const text = `${managed}  healthCheck: {url: "http://alice:s3cret@target.example/"}\n`;
    expect(problems(text).join('\n')).not.toMatch(/s3cret|alice/);
  });

  it('names the document of a multi-document file that is wrong', () => {
    const text = `${managed}---\nname: ok-2\nspec: {mode: managed}\n`;
    expect(problems(text)).toContain(
      'p.yaml document 2: spec.zone: Invalid input: expected string, received undefined',
    );
  });
});

// What `proxies get NAME -o yaml|json` prints (the API's resource, docs/api.md "The proxy resource"), and
// what `list`, `create` and `apply` print for several: read as the body `{name, spec}` — the plane's
// fields dropped, the API refusing them — and the uid and generation it was saved at.
describe('parseProxyFile of what the CLI prints', () => {
  const resource = (name: string, generation: number) => ({
    name,
    uid: `5b0c7a0e-0c3f-4b7e-9d0f-2f7b1c1d8e1${generation}`,
    generation,
    createdAt: '2026-02-01T12:00:00.000Z',
    deletionRequestedAt: null as string | null,
    spec: {
      mode: 'external',
      endpoint: { host: 'p.example', port: 3128, protocol: 'http' },
      attributes: { pool: 'default' },
      capacity: 4,
    },
    status: {
      phase: 'Ready',
      observedGeneration: generation,
      providerId: null,
      ip: '203.0.113.7',
      conditions: [{ type: 'Healthy', status: 'True', reason: 'ProbeOk', message: '' }],
      specHash: 'abc',
      latencyMillis: 12,
      lastHealthCheckTime: '2026-02-01T12:00:30.000Z',
      nextReconcileAt: null,
    },
  });
  const asFile = (r: ReturnType<typeof resource>) => ({ name: r.name, spec: r.spec });
  const savedFrom = (r: ReturnType<typeof resource>) => ({ uid: r.uid, generation: r.generation });
  const read = (text: string) =>
    parseProxyFile(text, 'p.yaml').map((p) => ({ body: p.body, savedFrom: p.savedFrom, where: p.where }));

  it.each([
    ['get -o yaml', yaml],
    ['get -o json', json],
  ])('reads `%s` as its name and spec, and the proxy it was saved from', (_, print) => {
    const r = resource('edge-1', 3);
    expect(read(print(r))).toEqual([{ body: asFile(r), savedFrom: savedFrom(r), where: 'p.yaml' }]);
  });

  it('reads a proxy being deleted as any other: the API refuses its spec write, not the CLI', () => {
    const r = { ...resource('edge-1', 3), deletionRequestedAt: '2026-02-01T13:00:00.000Z' };
    expect(read(yaml(r))[0]!.body).toEqual(asFile(r));
  });

  it('reads several: YAML documents (create/apply -o yaml), a JSON list (-o json)', () => {
    const [a, b] = [resource('edge-1', 3), resource('edge-2', 1)];
    const both = [
      { body: asFile(a), savedFrom: savedFrom(a) },
      { body: asFile(b), savedFrom: savedFrom(b) },
    ];
    expect(read([a, b].map(yaml).join('\n---\n'))).toMatchObject(both);
    expect(read(json([a, b]))).toMatchObject(both);
  });

  it('reads a listing (`proxies list -o yaml|json`): its proxies, with what the listing adds to each', () => {
    const [a, b] = [resource('edge-1', 3), resource('edge-2', 1)];
    const listed = (r: ReturnType<typeof resource>) => ({
      ...r,
      healthy: true,
      leasable: true,
      activeLeases: 2,
    });
    const listing = {
      // A proxy whose lease state does not decode is listed with `leaseStateInvalid: true`.
      proxies: [listed(a), { ...listed(b), leaseStateInvalid: true }],
      count: 2,
      skipped: { count: 1, names: ['bad-1'] },
    };
    for (const text of [yaml(listing), json(listing)]) {
      expect(read(text)).toEqual([
        { body: asFile(a), savedFrom: savedFrom(a), where: 'p.yaml proxies item 1' },
        { body: asFile(b), savedFrom: savedFrom(b), where: 'p.yaml proxies item 2' },
      ]);
    }
  });

  it('reads the saved listing of a fleet of 1,600 (at 1 MiB, ~670 managed proxies were refused); refuses one over 16 MiB unparsed', () => {
    const listing = (n: number) => ({
      proxies: Array.from({ length: n }, (_, i) => ({
        ...resource(`edge-${i}`, 1),
        healthy: true,
        leasable: true,
        activeLeases: 0,
      })),
      count: n,
    });
    const text = yaml(listing(1_600));
    expect(Buffer.byteLength(text)).toBeGreaterThan(1024 * 1024);
    expect(read(text)).toHaveLength(1_600);
    const tooBig = `${yaml(listing(1))}\n# ${'x'.repeat(MAX_INPUT_BYTES)}\n`;
    expect(() => read(tooBig)).toThrow(new InputError('p.yaml is over 16 MiB: split it'));
  }, 30_000);

  it("refuses a crawler token's listing: its specs lack their own cloud-init, so it is no copy", () => {
    const listing = { proxies: [resource('edge-1', 3)], count: 1, redacted: ['spec.cloudInit'] };
    for (const text of [yaml(listing), json(listing)]) {
      expect(() => read(text)).toThrow(
        'p.yaml is a listing made with a crawler token, which leaves out spec.cloudInit: list the proxies with an admin token to save a copy that can be applied',
      );
    }
  });

  it('reads the spec of a newer API with a field this CLI does not know: it is sent as printed', () => {
    const r = resource('edge-1', 3);
    const newer = { ...r, spec: { ...r.spec, sni: 's.example' } };
    expect(read(yaml(newer))).toEqual([{ body: asFile(newer), savedFrom: savedFrom(r), where: 'p.yaml' }]);
  });

  it('still checks the spec it carries, where it is', () => {
    const r = resource('edge-1', 3);
    const bad = { ...r, spec: { ...r.spec, capacity: 0 } };
    expect(problems(json({ proxies: [r, bad], count: 2 }))[1]).toBe(
      'p.yaml proxies item 2: spec.capacity: Too small: expected number to be >=1',
    );
  });

  it('a file without uid and generation says nothing of where it came from', () => {
    expect(parseProxyFile(managed, 'p.yaml')[0]!.savedFrom).toEqual({});
  });
});
