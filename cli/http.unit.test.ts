// A success status whose body is not JSON is not the API's answer (a web server, sign-in page or load
// balancer at the --api URL): before, the CLI took the text as the answer — `-o json` printed
// {"message": "<html…"} and a release said "released", exit 0, though nothing reached the API.
import { describe, expect, it } from 'vitest';
import { runCli } from './run.js';
import { cliDeps, recordingIo } from './testing.js';

const page = '<!doctype html><html><body>Sign in</body></html>';

async function run(argv: string[], body: string | null, status = 200) {
  const io = recordingIo();
  const fetch = (async () =>
    new Response(body, { status, headers: { 'content-type': 'text/html' } })) as typeof globalThis.fetch;
  const exit = await runCli([...argv, '--api', 'http://127.0.0.1:9'], cliDeps(io, fetch));
  return { exit, out: io.outLines, err: io.errLines };
}

describe('a 2xx answer that is not JSON', () => {
  it.each([
    [['proxies', 'get', 'p1', '-o', 'json']],
    [['proxies', 'list', '-o', 'yaml']],
    [['leases', 'release', 'l-1']],
    [['gateway', 'unreclaim', 'p1']],
  ])('%j: error bad_response, exit 1, nothing on stdout', async (argv) => {
    const r = await run(argv, page);
    expect(r.out).toEqual([]);
    expect(r.exit).toBe(1);
    expect(r.err[0]).toBe(
      'error: bad_response — the API answered HTTP 200 with a body that is not JSON (is --api / PROXYPLANE_API_URL the API?)',
    );
  });

  it('an empty 2xx body (204) is still a success', async () => {
    const r = await run(['leases', 'release', 'l-1'], null, 204);
    expect(r).toEqual({ exit: 0, out: ['lease l-1 released'], err: [] });
  });
});
