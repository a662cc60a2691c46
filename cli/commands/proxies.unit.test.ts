import { describe, expect, it } from 'vitest';
import { runCli } from '../run.js';
import { cliDeps, recordingIo } from '../testing.js';
import { LIST_PAGE_SIZE } from './proxies.js';

/** runCli whose file read fails with `code`, and a fetch that counts the API calls. */
async function createFrom(file: string, code: string) {
  let calls = 0;
  const failure = () => Promise.reject(Object.assign(new Error(`${code}: open '${file}'`), { code }));
  const io = { ...recordingIo(), readStdin: failure, readFile: failure };
  const err = io.errLines;
  const fetch = (async () => {
    calls++;
    return new Response('{}', { status: 201 });
  }) as typeof globalThis.fetch;
  const exit = await runCli(
    ['proxies', 'create', '-f', file, '--api', 'http://127.0.0.1:9'],
    cliDeps(io, fetch),
  );
  return { exit, err, calls };
}

describe('proxies create -f', () => {
  it.each([
    ['/nonexistent.yaml', 'ENOENT', 'cannot read /nonexistent.yaml: ENOENT'],
    ['/etc', 'EISDIR', 'cannot read /etc: EISDIR'],
    ['/root/fleet.yaml', 'EACCES', 'cannot read /root/fleet.yaml: EACCES'],
    ['-', 'EAGAIN', 'cannot read stdin: EAGAIN'],
  ])('%s failing with %s is bad input: exit 2, nothing sent', async (file, code, message) => {
    expect(await createFrom(file, code)).toEqual({
      exit: 2,
      err: [`error: invalid_input — ${message}`],
      calls: 0,
    });
  });
});

describe('proxies create -f of a file the API would refuse a proxy of', () => {
  it("a managed proxy on sshd's port (the API's port_reserved) creates nothing, not the ones before it (exit 2)", async () => {
    const file = [
      'name: a1\nspec: {mode: managed, zone: us-central1-a, credentialsRef: {secret: s}}',
      'name: b2\nspec: {mode: managed, zone: us-central1-a, credentialsRef: {secret: s}, port: 22}',
    ].join('\n---\n');
    const io = { ...recordingIo(), readFile: async () => file };
    const sent: string[] = [];
    const fetch = (async (url: string, init: RequestInit) => {
      sent.push(`${init.method} ${new URL(url).pathname}`);
      return new Response(JSON.stringify({ name: 'a1', spec: {}, status: {} }), { status: 201 });
    }) as unknown as typeof globalThis.fetch;
    const exit = await runCli(
      ['proxies', 'create', '-f', 'fleet.yaml', '--api', 'http://127.0.0.1:9'],
      cliDeps(io, fetch),
    );
    expect({ exit, sent, err: io.errLines }).toEqual({
      exit: 2,
      sent: [],
      err: [
        'error: invalid_input — fleet.yaml is not a valid proxy definition; nothing was created',
        '  fleet.yaml document 2: spec.port: port 22 belongs to sshd, so the default cloud-init cannot run the proxy there; use another port (3128 by default), or a spec.cloudInit of your own',
      ],
    });
  });
});

describe('proxies create -f of what `proxies get -o yaml` printed', () => {
  it("sends its name and spec only: the plane's fields (uid, generation, status, …) are dropped", async () => {
    const got = [
      'name: edge-2',
      'uid: 5b0c7a0e-0c3f-4b7e-9d0f-2f7b1c1d8e11',
      'generation: 3',
      'createdAt: 2026-02-01T12:00:00.000Z',
      'deletionRequestedAt: null',
      'spec:',
      '  mode: external',
      '  endpoint: { host: 10.0.0.9, port: 3128, protocol: http }',
      'status:',
      '  phase: Ready',
      '  conditions: []',
    ].join('\n');
    const io = { ...recordingIo(), readFile: async () => got };
    const sent: unknown[] = [];
    const fetch = (async (_url: string, init: RequestInit) => {
      sent.push(JSON.parse(String(init.body)));
      return new Response(JSON.stringify({ name: 'edge-2', spec: {}, status: {} }), { status: 201 });
    }) as unknown as typeof globalThis.fetch;
    const exit = await runCli(
      ['proxies', 'create', '-f', 'p.yaml', '--api', 'http://127.0.0.1:9'],
      cliDeps(io, fetch),
    );
    expect({ exit, out: io.outLines, err: io.errLines }).toEqual({
      exit: 0,
      out: ['proxy/edge-2 created'],
      err: [],
    });
    expect(sent).toEqual([
      {
        name: 'edge-2',
        spec: { mode: 'external', endpoint: { host: '10.0.0.9', port: 3128, protocol: 'http' } },
      },
    ]);
  });
});

describe('proxies create -f: the API refuses one of several', () => {
  const file = [
    'name: a\nspec: {mode: external, endpoint: {host: 10.0.0.1, port: 3128}}',
    'name: b\nspec: {mode: external, endpoint: {host: 10.0.0.2, port: 3128}}',
    'name: c\nspec: {mode: external, endpoint: {host: 10.0.0.3, port: 3128}}',
  ].join('\n---\n');

  it.each([['table'], ['json'], ['yaml']])(
    '-o %s: says which were created before it and which were not sent (exit 1)',
    async (output) => {
      const io = { ...recordingIo(), readFile: async () => file };
      const sent: string[] = [];
      const fetch = (async (_url: string, init: RequestInit) => {
        const { name } = JSON.parse(String(init.body)) as { name: string };
        sent.push(name);
        return name === 'b'
          ? new Response(JSON.stringify({ error: 'already_exists', message: 'taken' }), { status: 409 })
          : new Response(JSON.stringify({ name, spec: {}, status: {} }), { status: 201 });
      }) as unknown as typeof globalThis.fetch;
      const exit = await runCli(
        ['proxies', 'create', '-f', 'fleet.yaml', '-o', output, '--api', 'http://127.0.0.1:9'],
        cliDeps(io, fetch),
      );
      expect(exit).toBe(1);
      expect(sent).toEqual(['a', 'b']);
      // Whatever the output format, stderr says it: -o json prints nothing of the proxies created.
      expect(io.errLines).toEqual([
        expect.stringMatching(/^error: already_exists — /),
        '  stopped at proxy/b (2 of 3): created before it: proxy/a; not sent: proxy/c',
      ]);
    },
  );
});

describe('proxies delete', () => {
  it.each([
    ['managed', 'its instance is gone'],
    ['external', 'reconcile removes it'],
  ])('says what a %s proxy waits for', async (mode, until) => {
    const io = recordingIo();
    const out = io.outLines;
    const fetch = (async () =>
      new Response(
        JSON.stringify({ name: 'p1', spec: { mode }, status: { phase: 'Ready', conditions: [] } }),
        {
          status: 202,
        },
      )) as typeof globalThis.fetch;
    const exit = await runCli(['proxies', 'delete', 'p1', '--api', 'http://127.0.0.1:9'], cliDeps(io, fetch));
    expect({ exit, out }).toEqual({
      exit: 0,
      out: [`proxy/p1 deletion requested (phase Deleting until ${until})`],
    });
  });
});

describe('proxies delete of a stored document that does not fit the model', () => {
  it('says so and what happens next, rather than fail on a body without a spec', async () => {
    const io = recordingIo();
    const body = {
      name: 'p1',
      uid: null,
      deletionRequestedAt: '2026-01-01T00:00:00.000Z',
      storedProxyInvalid: { issues: [{ path: 'spec.port', code: 'invalid_type', message: 'x' }] },
    };
    const fetch = (async () =>
      new Response(JSON.stringify(body), { status: 202 })) as typeof globalThis.fetch;
    const exit = await runCli(['proxies', 'delete', 'p1', '--api', 'http://127.0.0.1:9'], cliDeps(io, fetch));
    expect({ exit, out: io.outLines }).toEqual({
      exit: 0,
      out: [
        'proxy/p1 deletion requested; its stored document does not fit the model (spec.port): reconcile removes the document, the orphan GC its instance — unless the GC’s brake refuses its sweeps, and then an operator by hand (docs/api.md § Delete)',
      ],
    });
  });
});

describe('proxies list', () => {
  const listed = (name: string, spec: Record<string, unknown>) => ({
    name,
    createdAt: '2026-01-01T00:00:00Z',
    deletionRequestedAt: null,
    spec: { attributes: {}, ...spec },
    status: { phase: 'Ready', ip: null, latencyMillis: null, conditions: [] },
  });

  it('shows where each proxy is: zone, host:port, or socks5://host:port for a SOCKS5 endpoint', async () => {
    const io = recordingIo();
    const proxies = [
      listed('p-managed', { mode: 'managed', zone: 'us-central1-a', protocol: 'http' }),
      listed('p-http', { mode: 'external', endpoint: { host: 'h.example', port: 3128, protocol: 'http' } }),
      listed('p-socks', {
        mode: 'external',
        endpoint: { host: 'r.example', port: 1080, protocol: 'socks5' },
      }),
      listed('p-v6', { mode: 'external', endpoint: { host: '2001:db8::1', port: 3128, protocol: 'http' } }),
    ];
    const fetch = (async () =>
      new Response(JSON.stringify({ proxies, count: 4 }), { status: 200 })) as typeof globalThis.fetch;
    const exit = await runCli(['proxies', 'list', '--api', 'http://127.0.0.1:9'], cliDeps(io, fetch));
    expect(exit).toBe(0);
    const row = (name: string) =>
      io.outLines
        .join('\n')
        .split('\n')
        .find((l) => l.startsWith(name));
    expect(row('p-managed')).toMatch(/\sus-central1-a\s/);
    expect(row('p-http')).toMatch(/\sh\.example:3128\s/);
    expect(row('p-socks')).toMatch(/\ssocks5:\/\/r\.example:1080\s/);
    expect(row('p-v6')).toMatch(/\s\[2001:db8::1\]:3128\s/);
    expect(io.errLines).toEqual([]);
  });

  it('reads suspect in the Healthy column for a SUSPECT verdict, as the fleet page does', async () => {
    const io = recordingIo();
    const healthy = (name: string, status: string, reason: string) => {
      const p = listed(name, { mode: 'managed', zone: 'us-central1-a' });
      return { ...p, status: { ...p.status, conditions: [{ type: 'Healthy', status, reason }] } };
    };
    const proxies = [
      healthy('p-sound', 'True', 'ProbeSucceeded'),
      healthy('p-passive', 'True', 'PassiveSuspect'),
      healthy('p-probe', 'True', 'ProbeSuspect'),
      healthy('p-down', 'False', 'PassiveFailures'),
    ];
    const fetch = (async () =>
      new Response(JSON.stringify({ proxies, count: proxies.length }), {
        status: 200,
      })) as typeof globalThis.fetch;
    expect(await runCli(['proxies', 'list', '--api', 'http://127.0.0.1:9'], cliDeps(io, fetch))).toBe(0);
    const healthyCell = (name: string) =>
      io.outLines
        .join('\n')
        .split('\n')
        .find((l) => l.startsWith(`${name} `))
        ?.split(/\s{2,}/)[4];
    expect(['p-sound', 'p-passive', 'p-probe', 'p-down'].map(healthyCell)).toEqual([
      'yes',
      'suspect',
      'suspect',
      'no',
    ]);
  });

  it('marks what was asked of a proxy beside its phase: cordoned, deleting, both', async () => {
    const io = recordingIo();
    const zone = { mode: 'managed', zone: 'us-central1-a' };
    const proxies = [
      listed('p-plain', zone),
      listed('p-cordoned', { ...zone, cordoned: true }),
      { ...listed('p-going', zone), deletionRequestedAt: '2026-01-02T00:00:00Z' },
      { ...listed('p-both', { ...zone, cordoned: true }), deletionRequestedAt: '2026-01-02T00:00:00Z' },
      {
        ...listed('p-deleting', zone),
        deletionRequestedAt: '2026-01-02T00:00:00Z',
        status: { phase: 'Deleting', ip: null, latencyMillis: null, conditions: [] },
      },
    ];
    const fetch = (async () =>
      new Response(JSON.stringify({ proxies, count: proxies.length }), {
        status: 200,
      })) as typeof globalThis.fetch;
    expect(await runCli(['proxies', 'list', '--api', 'http://127.0.0.1:9'], cliDeps(io, fetch))).toBe(0);
    const phase = (name: string) =>
      io.outLines
        .join('\n')
        .split('\n')
        .find((l) => l.startsWith(`${name} `))
        ?.split(/\s{2,}/)[3];
    expect(phase('p-plain')).toBe('Ready');
    expect(phase('p-cordoned')).toBe('Ready (cordoned)');
    expect(phase('p-going')).toBe('Ready (deleting)');
    expect(phase('p-both')).toBe('Ready (deleting, cordoned)');
    expect(phase('p-deleting')).toBe('Deleting');
  });

  it('tells on stderr of the documents the API skipped, leaving the table as it is', async () => {
    const io = recordingIo();
    const body = {
      proxies: [listed('p-ok', { mode: 'managed', zone: 'us-central1-a' })],
      count: 1,
      skipped: { count: 1, names: ['p-broken'] },
    };
    const fetch = (async () =>
      new Response(JSON.stringify(body), { status: 200 })) as typeof globalThis.fetch;
    expect(await runCli(['proxies', 'list', '--api', 'http://127.0.0.1:9'], cliDeps(io, fetch))).toBe(0);
    expect(io.outLines.join('\n')).toContain('p-ok');
    expect(io.outLines.join('\n')).not.toContain('p-broken');
    expect(io.errLines).toEqual([
      '1 stored proxy document(s) do not fit the model and are not listed: p-broken (proxies get <name> says why; proxies delete <name> removes it)',
    ]);
  });
});

describe('proxies list: every page', () => {
  const listed = (name: string) => ({
    name,
    createdAt: '2026-01-01T00:00:00Z',
    deletionRequestedAt: null,
    spec: { mode: 'managed', zone: 'us-central1-a', attributes: {} },
    status: { phase: 'Ready', ip: null, latencyMillis: null, conditions: [] },
  });
  async function listPages(pages: unknown[], ...flags: string[]) {
    const io = recordingIo();
    const urls: string[] = [];
    const fetch = (async (url: string | URL | Request) => {
      urls.push(String(url));
      const page = pages.shift() ?? { error: 'internal', message: 'no more pages' };
      return new Response(JSON.stringify(page), { status: 'error' in (page as object) ? 500 : 200 });
    }) as typeof globalThis.fetch;
    const exit = await runCli(
      ['proxies', 'list', ...flags, '--api', 'http://127.0.0.1:9'],
      cliDeps(io, fetch),
    );
    return { exit, urls, out: io.outLines.join('\n'), err: io.errLines };
  }

  it('follows nextPageToken to the last page and prints one listing: count all, skipped added up, no token', async () => {
    const { exit, urls, out, err } = await listPages(
      [
        {
          proxies: [listed('p1'), listed('p2')],
          count: 2,
          nextPageToken: 'T1',
          skipped: { count: 1, names: ['b1'] },
        },
        { proxies: [], count: 0, nextPageToken: 'T2' },
        { proxies: [listed('p3')], count: 1, nextPageToken: null, skipped: { count: 1, names: ['b2'] } },
      ],
      '--page-size',
      '2',
      '--attr',
      'region=eu',
      '-o',
      'json',
    );
    expect({ exit, err }).toEqual({ exit: 0, err: [] });
    expect(urls.map((u) => new URL(u).search)).toEqual([
      '?attr.region=eu&pageSize=2',
      '?attr.region=eu&pageSize=2&pageToken=T1',
      '?attr.region=eu&pageSize=2&pageToken=T2',
    ]);
    expect(JSON.parse(out)).toEqual({
      proxies: [listed('p1'), listed('p2'), listed('p3')],
      count: 3,
      skipped: { count: 2, names: ['b1', 'b2'] },
    });
  });

  it(`asks for ${LIST_PAGE_SIZE} a page without --page-size`, async () => {
    const { exit, urls } = await listPages([{ proxies: [listed('p1')], count: 1, nextPageToken: null }]);
    expect(exit).toBe(0);
    expect(new URL(urls[0]!).searchParams.get('pageSize')).toBe(String(LIST_PAGE_SIZE));
  });

  it.each(['0', '1001', '-1', '1.5', 'ten', ''])(
    'refuses --page-size %j: exit 2, nothing sent',
    async (size) => {
      const { exit, urls, err } = await listPages([], `--page-size=${size}`);
      expect({ exit, calls: urls.length }).toEqual({ exit: 2, calls: 0 });
      expect(err.join('\n')).toContain(`--page-size must be an integer in 1–1000, got "${size}"`);
    },
  );

  it('lists an API older than paging (it refuses pageSize as unknown) once more, unpaged', async () => {
    const io = recordingIo();
    const urls: string[] = [];
    const answers: Array<[number, unknown]> = [
      [
        400,
        {
          error: 'invalid_request',
          message: 'invalid query string',
          issues: [{ path: 'pageSize', code: 'custom', message: 'unknown query parameter (use phase, …)' }],
        },
      ],
      [200, { proxies: [listed('p1')], count: 1 }],
    ];
    const fetch = (async (url: string | URL | Request) => {
      urls.push(String(url));
      const [status, body] = answers.shift() ?? [500, { error: 'internal' }];
      return new Response(JSON.stringify(body), { status });
    }) as typeof globalThis.fetch;
    const exit = await runCli(
      ['proxies', 'list', '--phase', 'ready', '-o', 'json', '--api', 'http://127.0.0.1:9'],
      cliDeps(io, fetch),
    );
    expect({ exit, err: io.errLines }).toEqual({ exit: 0, err: [] });
    expect(urls.map((u) => new URL(u).search)).toEqual([
      `?phase=Ready&pageSize=${LIST_PAGE_SIZE}`,
      '?phase=Ready',
    ]);
    expect(JSON.parse(io.outLines.join('\n'))).toEqual({ proxies: [listed('p1')], count: 1 });
  });

  it('stops at a next page token that does not advance: exit 1, bad_response', async () => {
    const { exit, urls, err } = await listPages([
      { proxies: [listed('p1')], count: 1, nextPageToken: 'T1' },
      { proxies: [listed('p2')], count: 1, nextPageToken: 'T1' },
    ]);
    expect({ exit, calls: urls.length }).toEqual({ exit: 1, calls: 2 });
    expect(err.join('\n')).toContain('a page token it was already sent');
  });

  // Only a token repeated on the very next page was caught: A → B → A → B … collected pages for ever.
  it('stops at a next page token sent before, not just the last: A, B, A → exit 1 bad_response after 3 calls', async () => {
    const cycle = (n: number) => ({ proxies: [listed(`p${n}`)], count: 1, nextPageToken: n % 2 ? 'A' : 'B' });
    const { exit, urls, err } = await listPages([1, 2, 3, 4, 5, 6, 7, 8].map(cycle));
    expect({ exit, calls: urls.length }).toEqual({ exit: 1, calls: 3 });
    expect(urls.map((u) => new URL(u).searchParams.get('pageToken'))).toEqual([null, 'A', 'B']);
    expect(err[0]).toBe(
      'error: bad_response — GET /v1/proxies answered a page token it was already sent as the next one',
    );
  });
});

describe('proxies list --protocol', () => {
  async function listWith(...flags: string[]) {
    const io = recordingIo();
    const urls: string[] = [];
    const fetch = (async (url: string | URL | Request) => {
      urls.push(String(url));
      return new Response(JSON.stringify({ proxies: [], count: 0 }), { status: 200 });
    }) as typeof globalThis.fetch;
    const exit = await runCli(
      ['proxies', 'list', ...flags, '--api', 'http://127.0.0.1:9'],
      cliDeps(io, fetch),
    );
    return { exit, urls, err: io.errLines };
  }

  it.each([
    ['socks5', 'socks5'],
    ['http', 'http'],
    ['SOCKS5', 'socks5'],
  ])('--protocol %s asks the API for protocol=%s', async (flag, sent) => {
    const { exit, urls } = await listWith('--protocol', flag, '--phase', 'ready');
    expect(exit).toBe(0);
    expect(urls).toHaveLength(1);
    const query = new URL(urls[0]!).searchParams;
    expect(query.get('protocol')).toBe(sent);
    expect(query.get('phase')).toBe('Ready');
  });

  it('sends no protocol without the flag', async () => {
    const { urls } = await listWith();
    expect(new URL(urls[0]!).searchParams.has('protocol')).toBe(false);
  });

  it.each(['socks4', 'https', ''])('refuses --protocol %j: exit 2, nothing sent', async (flag) => {
    const { exit, urls, err } = await listWith('--protocol', flag);
    expect({ exit, calls: urls.length }).toEqual({ exit: 2, calls: 0 });
    expect(err.join('\n')).toContain(`--protocol must be one of http, socks5, got "${flag}"`);
  });
});

describe('proxies list: the credential it sends', () => {
  // GET /v1/proxies is discovery too: a crawler token opens it (docs/leases.md), so a crawler who holds only
  // PROXYPLANE_CRAWLER_TOKEN can list what it could lease; an admin credential, when there is one, comes first
  // (an admin sees the whole spec).
  async function sentWith(env: Record<string, string>) {
    const io = recordingIo();
    const sent: Array<string | null> = [];
    const fetch = (async (_url: string, init: RequestInit) => {
      sent.push(new Headers(init.headers).get('authorization'));
      return new Response(JSON.stringify({ proxies: [], count: 0 }), { status: 200 });
    }) as typeof globalThis.fetch;
    const deps = { ...cliDeps(io, fetch), tokens: { env, localState: () => null, gcloudToken: () => null } };
    const exit = await runCli(['proxies', 'list', '--api', 'http://127.0.0.1:9'], deps);
    return { exit, sent };
  }

  it.each([
    [{ PROXYPLANE_CRAWLER_TOKEN: 'crawler-token-0123456789' }, 'Bearer crawler-token-0123456789'],
    [
      {
        PROXYPLANE_CRAWLER_TOKEN: 'crawler-token-0123456789',
        PROXYPLANE_ADMIN_TOKEN: 'admin-token-0123456789',
      },
      'Bearer admin-token-0123456789',
    ],
    [
      { PROXYPLANE_TOKEN: 'any-token-0123456789', PROXYPLANE_ADMIN_TOKEN: 'admin-token-0123456789' },
      'Bearer any-token-0123456789',
    ],
  ])('with %j sends %s', async (env, authorization) => {
    expect(await sentWith(env)).toEqual({ exit: 0, sent: [authorization] });
  });
});

describe('a NAME that cannot be a proxy name', () => {
  // Sent as it was, `.` and `..` are dot-segments the URL resolves away (`proxies delete ..` asked for
  // DELETE /v1/, `proxies reconcile .` for POST /v1/proxies/reconcile) and came back as "the API has no
  // route" or "method not allowed: client and service versions differ?"; any other is the API's 400.
  it.each([
    ['get', '.'],
    ['delete', '..'],
    ['reconcile', '.'],
    ['patch', '..', '-p', '{"capacity": 8}'],
    ['get', 'Edge-1'],
    ['delete', 'a/b'],
  ])('proxies %s %s is bad input: exit 2, nothing sent', async (verb, name, ...rest) => {
    const io = recordingIo();
    let calls = 0;
    const fetch = (async () => {
      calls++;
      return new Response('{}', { status: 200 });
    }) as typeof globalThis.fetch;
    const exit = await runCli(
      ['proxies', verb, name, ...rest, '--api', 'http://127.0.0.1:9'],
      cliDeps(io, fetch),
    );
    expect({ exit, calls }).toEqual({ exit: 2, calls: 0 });
    expect(io.errLines[0]).toMatch(/^error: invalid_input — not a proxy name: .*must be a DNS label/);
  });
});
