import { describe, expect, it } from 'vitest';
import {
  defaultApiUrl,
  GCLOUD_SOURCE,
  GCLOUD_UNNAMED,
  GCLOUD_WITHHELD,
  resolveApiUrl,
  resolveToken,
  type TokenSources,
} from './config.js';
import { runCli } from './run.js';
import { cliDeps, recordingIo } from './testing.js';

const sources = (
  env: Record<string, string>,
  state: Record<string, string> | null = null,
  gcloud: string | null = null,
) => {
  const calls = { gcloud: 0 };
  const src: TokenSources = {
    env,
    localState: () => (state ? { env: state } : null),
    gcloudToken: () => {
      calls.gcloud++;
      return gcloud;
    },
  };
  return { src, calls };
};

const API = 'http://127.0.0.1:18300';

describe('resolveToken', () => {
  it.each([
    ['admin', { PROXYPLANE_TOKEN: 't', PROXYPLANE_ADMIN_TOKEN: 'a' }, 't', 'PROXYPLANE_TOKEN'],
    ['admin', { PROXYPLANE_ADMIN_TOKEN: 'a', PROXYPLANE_CRAWLER_TOKEN: 'c' }, 'a', 'PROXYPLANE_ADMIN_TOKEN'],
    [
      'crawler',
      { PROXYPLANE_ADMIN_TOKEN: 'a', PROXYPLANE_CRAWLER_TOKEN: 'c' },
      'c',
      'PROXYPLANE_CRAWLER_TOKEN',
    ],
    ['crawler', { PROXYPLANE_ADMIN_TOKEN: 'a' }, 'a', 'PROXYPLANE_ADMIN_TOKEN'],
  ] as const)('%s with %j uses %s', (role, env, token, source) => {
    const { src, calls } = sources(env, null, 'g');
    expect(resolveToken(role, API, src)).toEqual({ token, source });
    expect(calls.gcloud).toBe(0);
  });

  it("uses a running local plane's tokens only for that plane's URL", () => {
    const state = { PROXYPLANE_API_URL: API, PROXYPLANE_ADMIN_TOKEN: 'la', PROXYPLANE_CRAWLER_TOKEN: 'lc' };
    expect(resolveToken('crawler', API, sources({}, state).src).token).toBe('lc');
    expect(resolveToken('admin', API, sources({}, state).src).token).toBe('la');
    expect(resolveToken('admin', 'https://prod.example', sources({}, state, 'g').src)).toEqual({
      token: 'g',
      source: 'gcloud auth print-identity-token',
    });
  });

  it("sends gcloud's token only over https or to this machine: never in the clear to another host", () => {
    for (const url of [
      'https://api.example',
      'http://127.0.0.1:8080',
      'http://127.9.9.9',
      'http://localhost:8080',
      'http://[::1]:8080',
    ]) {
      const { src, calls } = sources({}, null, 'g');
      expect(resolveToken('admin', url, src), url).toEqual({ token: 'g', source: GCLOUD_SOURCE });
      expect(calls.gcloud).toBe(1);
    }
    for (const url of [
      'http://10.0.0.5:18300',
      'http://api.example',
      'http://203.0.113.9:18300',
      'http://[2001:db8::1]',
      'http://128.0.0.1',
    ]) {
      const { src, calls } = sources({}, null, 'g');
      expect(resolveToken('admin', url, src), url).toEqual({ token: null, source: GCLOUD_WITHHELD });
      expect(calls.gcloud, 'gcloud not even run').toBe(0);
    }
    // A token the user set is theirs to send: the rule is on the ambient one.
    expect(
      resolveToken('admin', 'http://10.0.0.5:18300', sources({ PROXYPLANE_TOKEN: 't' }, null, 'g').src),
    ).toEqual({
      token: 't',
      source: 'PROXYPLANE_TOKEN',
    });
  });

  // The local plane's default port is anyone's on a shared machine: with no plane of the user's running
  // there, a listener another user put on it was sent the admin's Google identity.
  it("sends gcloud's token over plain http to this machine only at a URL the user named", () => {
    const unnamed = sources({}, null, 'g');
    expect(resolveToken('admin', API, unnamed.src, false)).toEqual({ token: null, source: GCLOUD_UNNAMED });
    expect(unnamed.calls.gcloud, 'gcloud not even run').toBe(0);
    expect(resolveToken('admin', API, sources({}, null, 'g').src, true)).toEqual({
      token: 'g',
      source: GCLOUD_SOURCE,
    });
    // The plane's own token still goes there (its state.json names that URL), and a token the user set.
    const plane = { PROXYPLANE_API_URL: API, PROXYPLANE_ADMIN_TOKEN: 'la' };
    expect(resolveToken('admin', API, sources({}, plane, 'g').src, false).token).toBe('la');
    expect(resolveToken('admin', API, sources({ PROXYPLANE_TOKEN: 't' }, null, 'g').src, false).token).toBe(
      't',
    );
  });

  it('run: with neither --api nor PROXYPLANE_API_URL, no gcloud token goes to the default port', async () => {
    const sent: Array<string | null> = [];
    const fetch = (async (_url: string, init: RequestInit) => {
      sent.push((init.headers as Record<string, string>).authorization ?? null);
      return new Response(JSON.stringify({ proxies: [], count: 0 }), { status: 200 });
    }) as unknown as typeof globalThis.fetch;
    const withGcloud = (env: Record<string, string>) => ({
      ...cliDeps(recordingIo(), fetch, env),
      tokens: { env, localState: () => null, gcloudToken: () => 'g-token' },
    });
    expect(await runCli(['proxies', 'list'], withGcloud({}))).toBe(0);
    expect(await runCli(['proxies', 'list', '--api', API], withGcloud({}))).toBe(0);
    expect(await runCli(['proxies', 'list'], withGcloud({ PROXYPLANE_API_URL: API }))).toBe(0);
    expect(sent).toEqual([null, 'Bearer g-token', 'Bearer g-token']);
  });

  it('falls back to no token (a local API with auth off needs none)', () => {
    expect(resolveToken('admin', API, sources({}).src)).toEqual({ token: null, source: 'none' });
  });
});

describe('resolveApiUrl', () => {
  it('takes the flag, then the env, then the local plane (with the port offset)', () => {
    expect(resolveApiUrl('http://x:1/', {})).toBe('http://x:1');
    expect(resolveApiUrl(undefined, { PROXYPLANE_API_URL: 'https://api.example/' })).toBe(
      'https://api.example',
    );
    expect(resolveApiUrl(undefined, {})).toBe('http://127.0.0.1:18300');
    expect(defaultApiUrl({ PROXYPLANE_PORT_OFFSET: '7000' })).toBe('http://127.0.0.1:25300');
  });
  // As an empty token variable is skipped: `PROXYPLANE_API_URL= npx proxyplane …` (or an .env line left
  // blank) was read as the URL "", bad usage, instead of the local plane.
  it.each([[''], ['  ']])('takes PROXYPLANE_API_URL=%j as unset: the local plane', (v) => {
    expect(resolveApiUrl(undefined, { PROXYPLANE_API_URL: v })).toBe('http://127.0.0.1:18300');
  });
  it.each([['nope'], ['ftp://x']])('refuses %s', (v) => {
    expect(() => resolveApiUrl(v, {})).toThrow(TypeError);
  });
  // Paths are appended to the URL: with a query or fragment every call went to `/` (the API's 404, read as
  // "is it older than this CLI?"). An empty `?` or `#` too.
  it.each([
    ['http://127.0.0.1:9?x=1'],
    ['http://127.0.0.1:9/#prod'],
    ['https://api.example/?'],
    ['https://api.example#'],
  ])('refuses %s: no query or fragment', (v) => {
    expect(() => resolveApiUrl(v, {})).toThrow(/the API URL takes no query or fragment/);
  });
  // `npm start` prints the fleet link with the admin token in its query: pasted as --api, not echoed back.
  it('names such a URL without its query or fragment', () => {
    for (const v of [
      'http://127.0.0.1:18300/fleet?token=ADMINSECRET123',
      'http://127.0.0.1:18300/#t=SECRET',
    ]) {
      let message = '';
      try {
        resolveApiUrl(v, {});
      } catch (err) {
        message = (err as Error).message;
      }
      expect(message).toMatch(
        /no query or fragment: drop its \?… or #… \(http:\/\/127\.0\.0\.1:18300\/(fleet)?…\)/,
      );
      expect(message).not.toMatch(/SECRET/);
    }
  });
  it('runs no command on such a URL: bad usage, nothing sent', async () => {
    const io = recordingIo();
    const sent: string[] = [];
    const fetch = (async (url: string) => {
      sent.push(url);
      return new Response('{}', { headers: { 'content-type': 'application/json' } });
    }) as unknown as typeof globalThis.fetch;
    const code = await runCli(
      ['proxies', 'delete', 'foo', '--api', 'http://127.0.0.1:9?x=1'],
      cliDeps(io, fetch, { PROXYPLANE_TOKEN: 'admin-token-0123456789' }),
    );
    expect(code).toBe(2);
    expect(io.errLines.join('\n')).toMatch(/no query or fragment/);
    expect(sent).toEqual([]);
  });
  // Read as `npm start` reads it: a typo was taken for 0, and the CLI talked to the default plane.
  it.each([['1O'], ['1.5'], ['-100'], [''], ['40001']])(
    'refuses PROXYPLANE_PORT_OFFSET=%j as bad usage',
    (v) => {
      expect(() => resolveApiUrl(undefined, { PROXYPLANE_PORT_OFFSET: v })).toThrow(/PROXYPLANE_PORT_OFFSET/);
    },
  );
  it.each([
    ['http://admin:hunter2@127.0.0.1:9/'],
    ['https://admin:hunter2@api.example'],
    ['https://hunter2@api.example'],
  ])('refuses userinfo in %s (never sent: the API takes a bearer token) without printing it', (v) => {
    expect(() => resolveApiUrl(v, {})).toThrow(TypeError);
    expect(() => resolveApiUrl(undefined, { PROXYPLANE_API_URL: v })).toThrow(/bearer token/);
    try {
      resolveApiUrl(v, {});
    } catch (err) {
      expect((err as Error).message).not.toContain('hunter2');
      expect((err as Error).message).toContain('…@');
    }
  });
});

describe('resolveApiUrl of a URL that does not parse', () => {
  it.each([['https://admin:a/hunter2@api.example'], ['https://admin:hunter2#x@api.example:x']])(
    'names %s without the password',
    (v) => {
      expect(() => resolveApiUrl(v, {})).toThrow(/^not a URL: https:\/\/…@api\.example/);
    },
  );
});

describe('an API URL with a password in it', () => {
  it('is bad usage (exit 2) before anything is sent, and the password is never printed', async () => {
    const io = recordingIo();
    const code = await runCli(
      ['proxies', 'list'],
      // The real fetch: it refuses such a URL itself, which the CLI took for an unreachable API and
      // printed the URL, password and all.
      cliDeps(io, globalThis.fetch, {
        PROXYPLANE_API_URL: 'http://admin:hunter2@127.0.0.1:9',
        PROXYPLANE_ADMIN_TOKEN: 'abc',
      }),
    );
    expect(code).toBe(2);
    expect(io.outLines.join('\n')).not.toContain('hunter2');
    expect(io.errLines.join('\n')).not.toContain('hunter2');
    expect(io.errLines[0]).toMatch(/^error: usage — --api \/ PROXYPLANE_API_URL: .*bearer token/);
  });
});
