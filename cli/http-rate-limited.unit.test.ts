// A 429 rate_limited (the API's per-caller limit, docs/api.md § Rate limits) is retried once after its
// Retry-After, as a 503 is: the refused request changed nothing. A second refusal is the error.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { runCli } from './run.js';
import { cliDeps, recordingIo } from './testing.js';

afterEach(() => {
  vi.useRealTimers();
});

function fetchAnswering(answers: Array<[number, unknown, Record<string, string>?]>) {
  const calls: string[] = [];
  const fetch = (async (url: string) => {
    calls.push(url);
    const [status, body, headers] = answers.shift() ?? [500, { error: 'internal', message: 'x' }];
    return new Response(body === null ? null : JSON.stringify(body), {
      status,
      headers: { 'content-type': 'application/json', ...headers },
    });
  }) as unknown as typeof globalThis.fetch;
  return { fetch, calls };
}

const limited: [number, unknown, Record<string, string>] = [
  429,
  { error: 'rate_limited', message: 'too many lease-other requests from this caller; retry after 1 s' },
  { 'retry-after': '1' },
];

async function release(answers: Array<[number, unknown, Record<string, string>?]>) {
  vi.useFakeTimers();
  const io = recordingIo();
  const f = fetchAnswering(answers);
  const done = runCli(['leases', 'release', 'l-1', '--api', 'http://127.0.0.1:9'], cliDeps(io, f.fetch));
  await vi.advanceTimersByTimeAsync(1_000);
  return { exit: await done, out: io.outLines, err: io.errLines, calls: f.calls };
}

describe('the CLI on 429 rate_limited', () => {
  it('waits Retry-After and sends the request once more', async () => {
    const r = await release([limited, [204, null]]);
    expect(r.calls).toHaveLength(2);
    expect({ exit: r.exit, out: r.out, err: r.err }).toEqual({
      exit: 0,
      out: ['lease l-1 released'],
      err: [],
    });
  });

  it('fails with rate_limited when refused again', async () => {
    const r = await release([limited, limited, [204, null]]);
    expect(r.calls).toHaveLength(2);
    expect(r.exit).toBe(1);
    expect(r.err[0]).toContain('rate_limited');
  });
});
