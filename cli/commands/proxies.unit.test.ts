import { describe, expect, it } from 'vitest';
import type { Io } from '../context.js';
import { runCli } from '../run.js';

/** runCli whose file read fails with `code`, and a fetch that counts the API calls. */
async function createFrom(file: string, code: string) {
  const err: string[] = [];
  let calls = 0;
  const failure = () => Promise.reject(Object.assign(new Error(`${code}: open '${file}'`), { code }));
  const io: Io = {
    out: () => {},
    err: (t) => err.push(t),
    isTTY: false,
    columns: 120,
    readStdin: failure,
    readFile: failure,
    now: () => new Date('2026-02-01T12:00:00Z'),
    sleep: async () => {},
    interrupted: new AbortController().signal,
  };
  const fetch = (async () => {
    calls++;
    return new Response('{}', { status: 201 });
  }) as typeof globalThis.fetch;
  const exit = await runCli(['proxies', 'create', '-f', file, '--api', 'http://127.0.0.1:9'], {
    io,
    env: {},
    tokens: { env: {}, localState: () => null, gcloudToken: () => null },
    fetch,
  });
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

describe('proxies delete', () => {
  it.each([
    ['managed', 'its instance is gone'],
    ['external', 'reconcile removes it'],
  ])('says what a %s proxy waits for', async (mode, until) => {
    const out: string[] = [];
    const io: Io = {
      out: (t) => out.push(t),
      err: () => {},
      isTTY: false,
      columns: 120,
      readStdin: async () => '',
      readFile: async () => '',
      now: () => new Date('2026-02-01T12:00:00Z'),
      sleep: async () => {},
      interrupted: new AbortController().signal,
    };
    const fetch = (async () =>
      new Response(
        JSON.stringify({ name: 'p1', spec: { mode }, status: { phase: 'Ready', conditions: [] } }),
        {
          status: 202,
        },
      )) as typeof globalThis.fetch;
    const exit = await runCli(['proxies', 'delete', 'p1', '--api', 'http://127.0.0.1:9'], {
      io,
      env: {},
      tokens: { env: {}, localState: () => null, gcloudToken: () => null },
      fetch,
    });
    expect({ exit, out }).toEqual({
      exit: 0,
      out: [`proxy/p1 deletion requested (phase Deleting until ${until})`],
    });
  });
});
