import { describe, expect, it } from 'vitest';
import { runCli } from '../run.js';
import { cliDeps, recordingIo } from '../testing.js';

/** runCli against a fetch that records what would have been sent. */
async function cli(
  args: string[],
  answer: object = { leaseId: 'l1', expiresAt: '2026-02-01T12:10:00.000Z', ttlSeconds: 600 },
) {
  const io = recordingIo();
  const sent: string[] = [];
  const bodies: unknown[] = [];
  const fetch = (async (url: string, init?: RequestInit) => {
    sent.push(url);
    if (typeof init?.body === 'string') bodies.push(JSON.parse(init.body));
    return new Response(JSON.stringify(answer), { headers: { 'content-type': 'application/json' } });
  }) as unknown as typeof globalThis.fetch;
  const code = await runCli(
    ['leases', ...args, '--api', 'http://127.0.0.1:9'],
    cliDeps(io, fetch, { PROXYPLANE_TOKEN: 'crawler-token-0123456789' }),
  );
  return { code, out: io.outLines, err: io.errLines, sent, bodies };
}

describe.each([
  ['renew', ['renew', 'l1'], 'http://127.0.0.1:9/v1/leases/l1/renew'],
  ['acquire', ['acquire', '--selector', 'region=eu'], 'http://127.0.0.1:9/v1/leases'],
])('leases %s --ttl', (_cmd, args, url) => {
  // The lease routes take 5 to 3600 seconds (TTL_BOUNDS): anything else is refused here, nothing sent.
  it.each(['1', '4', '3601', '0', 'ten'])('refuses %s before sending', async (ttl) => {
    const r = await cli([...args, '--ttl', ttl]);
    expect(r.code).toBe(2);
    expect(r.err.join('\n')).toMatch(/--ttl must be (an integer from \d+ to 3600|a positive integer)/);
    expect(r.sent).toEqual([]);
  });

  it.each(['5', '3600'])('sends %s', async (ttl) => {
    const r = await cli([...args, '--ttl', ttl]);
    // Sent as given (what acquire makes of this fake's renew-shaped answer is not the point here).
    expect(r).toMatchObject({
      sent: [url],
      bodies: [expect.objectContaining({ ttlSeconds: Number(ttl) })],
    });
  });
});

describe('leases renew: what it says', () => {
  // the test clock (recordingIo) reads 2026-02-01T12:00:00Z
  it('the new expiry and the TTL', async () => {
    const r = await cli(['renew', 'l1']);
    expect(r.out).toEqual(['lease l1 renewed until 2026-02-01T12:10:00.000Z (TTL 600s)']);
  });

  it('with a --ttl shorter than what is left: that the expiry stands, and the TTL it now has', async () => {
    const r = await cli(['renew', 'l1', '--ttl', '60'], {
      leaseId: 'l1',
      expiresAt: '2026-02-01T12:10:00.000Z',
      ttlSeconds: 60,
    });
    expect(r.out).toEqual([
      'lease l1 renewed: its expiry stands at 2026-02-01T12:10:00.000Z (600s left, more than its TTL, now 60s)',
    ]);
  });

  it('without --ttl a renewal extends: a clock here behind the API changes nothing said', async () => {
    const r = await cli(['renew', 'l1'], {
      leaseId: 'l1',
      expiresAt: '2026-02-01T12:10:02.000Z', // the API's clock 2 s ahead
      ttlSeconds: 600,
    });
    expect(r.out).toEqual(['lease l1 renewed until 2026-02-01T12:10:02.000Z (TTL 600s)']);
  });
});

// A 2xx of another shape was only cast: `lease undefined renewed until undefined (TTL undefineds)`,
// exit 0, as if the lease had been extended. It is now checked against the API's RenewResponse schema.
describe('leases renew: an answer that is not a renewal', () => {
  it.each([
    ['{}', {}, ['leaseId: ', 'expiresAt: ', 'ttlSeconds: ']],
    [
      'a TTL that is no number',
      { leaseId: 'l1', expiresAt: '2026-02-01T12:10:00.000Z', ttlSeconds: '600' },
      ['ttlSeconds: '],
    ],
  ])(
    '%s: error bad_response with what does not fit, exit 1, nothing printed',
    async (_what, answer, issues) => {
      for (const o of ['table', 'json']) {
        const r = await cli(['renew', 'l1', '-o', o], answer);
        expect({ code: r.code, out: r.out }).toEqual({ code: 1, out: [] });
        expect(r.err[0]).toMatch(
          /^error: bad_response — the API's answer to POST \/v1\/leases\/\{id\}\/renew is not a renewal/,
        );
        expect(r.err.slice(1).map((l) => l.trim().replace(/ .*/, ' '))).toEqual(issues);
      }
    },
  );

  it('-o json prints the renewal as the API sent it, fields of a newer API kept', async () => {
    const answer = { leaseId: 'l1', expiresAt: '2026-02-01T12:10:00.000Z', ttlSeconds: 600, extra: 1 };
    const r = await cli(['renew', 'l1', '-o', 'json'], answer);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.out.join('\n'))).toEqual(answer);
  });
});

describe('leases report: what it says', () => {
  it('names the site as the API keeps it: the host, whatever the port', async () => {
    const r = await cli(['report', 'l1', 'banned', '--target', 'Example.COM:0443']);
    expect(r.out).toEqual(['lease l1 reported banned: its proxy cools down for example.com, any port']);
  });
});

describe('leases acquire: Idempotency-Key', () => {
  it('sends a new key per command and the same one on its retry of a 503', async () => {
    const keys: Array<string | null> = [];
    let status = 503;
    const grant = {
      leaseId: 'l1',
      proxy: { name: 'p', url: 'http://10.0.0.1:3128', attributes: {}, latencyMillis: null },
      expiresAt: '2026-02-01T12:10:00.000Z',
      ttlSeconds: 300,
      target: null,
      exclusive: false,
    };
    const fetch = (async (_url: string, init?: RequestInit) => {
      keys.push(new Headers(init?.headers).get('idempotency-key'));
      const res =
        status === 503
          ? new Response('{"error":"unavailable"}', { status: 503, headers: { 'retry-after': '1' } })
          : new Response(JSON.stringify(grant), { status: 201 });
      status = 201;
      return res;
    }) as unknown as typeof globalThis.fetch;
    for (let i = 0; i < 2; i++) {
      const code = await runCli(
        ['leases', 'acquire', '-o', 'json', '--api', 'http://127.0.0.1:9'],
        cliDeps(recordingIo(), fetch, { PROXYPLANE_TOKEN: 'crawler-token-0123456789' }),
      );
      expect(code).toBe(0);
    }
    expect(keys).toHaveLength(3);
    expect(keys[0]).toMatch(/^[0-9a-f-]{36}$/);
    expect(keys[1]).toBe(keys[0]);
    expect(keys[2]).not.toBe(keys[0]);
  });
});

/** `leases acquire` with `flags`, answered by a grant of a proxy at `url`. */
async function acquired(url: string, flags: string[]) {
  const grant = {
    leaseId: 'l1',
    proxy: { name: 'p', url, attributes: {}, latencyMillis: null },
    expiresAt: '2026-02-01T12:10:00.000Z',
    ttlSeconds: 300,
    target: null,
    exclusive: false,
  };
  const fetch = (async () =>
    new Response(JSON.stringify(grant), { status: 201 })) as unknown as typeof globalThis.fetch;
  const io = recordingIo();
  const code = await runCli(
    ['leases', 'acquire', ...flags, '--api', 'http://127.0.0.1:9'],
    cliDeps(io, fetch, { PROXYPLANE_TOKEN: 'crawler-token-0123456789' }),
  );
  return { code, io };
}

describe('leases acquire -o url', () => {
  it('prints the URL alone on stdout, and on stderr the lease id and how to release it', async () => {
    const { code, io } = await acquired('http://u:pw@10.0.0.1:3128', ['-o', 'url']);
    expect(code).toBe(0);
    expect(io.outLines).toEqual(['http://u:pw@10.0.0.1:3128']);
    // Without the id the lease could not be released: it held its slot until its TTL.
    expect(io.errLines).toEqual([
      'lease l1 on p until 2026-02-01T12:10:00.000Z (release: proxyplane leases release l1)',
    ]);
  });
});

describe('leases acquire: the table', () => {
  it('quotes the proxy URL of its curl line as a shell word, a password with a quote in it too', async () => {
    const { code, io } = await acquired("http://u:it's@10.0.0.1:3128", []);
    expect(code).toBe(0);
    expect(io.outLines.join('\n')).toContain("fetch:    curl -x 'http://u:it'\\''s@10.0.0.1:3128' http://…");
  });
});

describe('leases acquire --protocol', () => {
  // SOCKS5 is opt-in on the service (AcquireRequest.protocols defaults to http): the flag is how to ask.
  it.each<{ flags: string[]; body: Record<string, unknown> }>([
    { flags: [], body: { selector: { pool: 'p' } } },
    { flags: ['--protocol', 'socks5'], body: { selector: { pool: 'p' }, protocols: ['socks5'] } },
    {
      flags: ['--protocol', 'socks5,http'],
      body: { selector: { pool: 'p' }, protocols: ['socks5', 'http'] },
    },
    {
      flags: ['--protocol', 'http', '--protocol', 'socks5'],
      body: { selector: { pool: 'p' }, protocols: ['http', 'socks5'] },
    },
  ])('$flags → $body', async ({ flags, body }) => {
    const r = await cli(['acquire', '-l', 'pool=p', ...flags, '-o', 'json']);
    expect(r).toMatchObject({ code: 0, sent: ['http://127.0.0.1:9/v1/leases'] });
    expect(r.bodies).toEqual([body]);
  });

  it.each<{ flags: string[]; err: RegExp }>([
    { flags: ['--protocol', 'https'], err: /--protocol must be one of http, socks5, got "https"/ },
    { flags: ['--protocol', 'socks5,socks5'], err: /--protocol: "socks5" given twice/ },
    { flags: ['--protocol'], err: /--protocol/ },
    { flags: ['--protocol', ''], err: /--protocol given with no value/ },
  ])('refuses $flags before sending', async ({ flags, err }) => {
    const r = await cli(['acquire', '-l', 'pool=p', ...flags]);
    expect(r.code).toBe(2);
    expect(r.err.join('\n')).toMatch(err);
    expect(r.sent).toEqual([]);
  });
});

// `leases acquire -l "$SELECTOR"` with the variable unset sent {"selector":{}}: a proxy of any pool, region or
// team, exit 0. Bad usage, nothing sent; leaving the flag out is how to ask for any proxy.
describe('leases acquire with a selector given empty', () => {
  it.each([[['-l', '']], [['--selector', ',']], [['-l', ' ']], [['-l', '', '-l', '']]])(
    '%j: refused before sending',
    async (flags) => {
      const r = await cli(['acquire', ...flags, '-o', 'env']);
      expect(r.code).toBe(2);
      expect(r.err.join('\n')).toMatch(/--selector given with no key=value pair/);
      expect(r.sent).toEqual([]);
    },
  );

  it('the flag left out asks for any proxy', async () => {
    const r = await cli(['acquire', '-o', 'json']);
    expect(r).toMatchObject({ code: 0, sent: ['http://127.0.0.1:9/v1/leases'] });
    expect(r.bodies).toEqual([{ selector: {} }]);
  });
});

// `leases release "$PROXYPLANE_LEASE_ID"` with the variable unset sent DELETE /v1/leases/ and read the API's
// 404 as "no route: is it older than this CLI?"; ".." sent DELETE /v1/. Bad usage, nothing sent.
describe('a lease ID that is empty or a dot segment', () => {
  it.each([
    [['release', '']],
    [['release', '..']],
    [['renew', '.']],
    [['renew', ' ']],
    [['report', '', 'ok']],
    [['report', '..', 'banned']],
  ])('%j: exit 2, nothing sent', async (args) => {
    const r = await cli(args);
    expect(r.code).toBe(2);
    expect(r.err[0]).toMatch(/not a lease ID/);
    expect(r.sent).toEqual([]);
  });
});
