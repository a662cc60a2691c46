// `proxyplane --api URL proxies list`: the flags every command takes may come before the command too, as
// kubectl's and gcloud's do; before, the first of them was read as the command ("unknown command").
import { describe, expect, it } from 'vitest';
import { runCli } from './run.js';
import { cliDeps, recordingIo } from './testing.js';

const proxy = {
  name: 'p1',
  uid: 'u',
  generation: 1,
  createdAt: '2026-02-01T11:00:00.000Z',
  deletionRequestedAt: null,
  spec: { mode: 'external', endpoint: { host: 'proxy.example', port: 3128 } },
  status: { phase: 'Ready' },
};

async function get(argv: string[]) {
  const io = recordingIo();
  const urls: string[] = [];
  const fetch = (async (url: string | URL | Request) => {
    urls.push(String(url));
    return new Response(JSON.stringify(proxy), {
      status: 200,
      headers: { 'content-type': 'application/json' },
    });
  }) as typeof globalThis.fetch;
  const exit = await runCli(argv, cliDeps(io, fetch));
  return { exit, urls, out: io.outLines.join('\n'), err: io.errLines };
}

describe('the global flags before the command', () => {
  it.each([
    [['--api', 'http://127.0.0.1:9', '-o', 'json', 'proxies', 'get', 'p1']],
    [['--api=http://127.0.0.1:9', '--output=json', 'proxies', 'get', 'p1']],
    [['--api', 'http://127.0.0.1:9', 'proxies', 'get', 'p1', '-o', 'json']],
    [['-ojson', 'proxies', 'get', 'p1', '--api', 'http://127.0.0.1:9']],
  ])('%j is the command with its flags', async (argv) => {
    const r = await get(argv);
    expect(r.err).toEqual([]);
    expect(r.exit).toBe(0);
    expect(r.urls).toEqual(['http://127.0.0.1:9/v1/proxies/p1']);
    expect(JSON.parse(r.out)).toMatchObject({ name: 'p1' });
  });

  it('another flag there is bad usage that says where flags go, and sends nothing', async () => {
    const r = await get(['--selector', 'pool=demo', 'leases', 'acquire']);
    expect(r.exit).toBe(2);
    expect(r.urls).toEqual([]);
    expect(r.err[0]).toBe(
      'error: usage — unknown flag "--selector" before the command: only --api and -o/--output go there; the command\'s own flags go after it (proxyplane <command> [flags])',
    );
  });

  it.each([[[]], [['-o', 'json']], [['--api', 'http://127.0.0.1:9']], [['--api']]])(
    '%j names no command: the usage on stderr, exit 2, nothing sent',
    async (argv) => {
      const r = await get(argv);
      expect(r.exit).toBe(2);
      expect(r.urls).toEqual([]);
      expect(r.out).toBe('');
      expect(r.err.join('\n')).toMatch(/^usage: proxyplane <command> \[flags\]/);
    },
  );

  // An alias `pp='proxyplane --api https://prod…'` and then `pp proxies delete x --api https://staging…`:
  // the flag before the command was moved behind it and won, so the command went to prod unseen.
  it.each([
    [['--api', 'http://127.0.0.1:9', 'proxies', 'get', 'p1', '--api', 'http://127.0.0.1:8']],
    [['-o', 'json', 'proxies', 'get', 'p1', '-o', 'yaml']],
    [['proxies', 'get', 'p1', '--api=http://127.0.0.1:9', '--api', 'http://127.0.0.1:8']],
  ])('%j gives a flag twice: bad usage, nothing sent', async (argv) => {
    const r = await get(argv);
    expect(r.exit).toBe(2);
    expect(r.urls).toEqual([]);
    expect(r.err[0]).toMatch(/^error: usage — --(api|output) given twice/);
  });
});
