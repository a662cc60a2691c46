// What the API sends reaches the terminal only as text: an attribute value is any string (up to 256
// characters), so an admin's "demo\u001b[2J\u001b]0;pwned\u0007" cleared the screen and retitled the
// terminal of whoever ran `proxies list` — a crawler token's holder included.

import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { runCli } from './run.js';
import { cliDeps, recordingIo } from './testing.js';

const HOSTILE = 'demo\u001b[2J\u001b]0;pwned\u0007\u009b31m\u007f\r';
/** Any C0 control, DEL or C1 control (the line feed too: lines are split on it before the check). */
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is its purpose
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
/** CONTROL but the tab: YAML writes a tab in a plain scalar as it is, and it is that value. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is its purpose
const CONTROL_BUT_TAB = /[\u0000-\u0008\u000a-\u001f\u007f-\u009f]/;

const proxy = {
  name: 'p1',
  createdAt: '2026-01-01T00:00:00Z',
  deletionRequestedAt: null,
  spec: { mode: 'managed', zone: 'us-central1-a', attributes: { label: HOSTILE, note: 'a\tb' } },
  status: { phase: 'Ready', ip: null, latencyMillis: null, conditions: [] },
};

async function run(argv: string[], answer: object, status = 200) {
  const io = recordingIo();
  const fetch = (async () => Response.json(answer, { status })) as typeof globalThis.fetch;
  const exit = await runCli([...argv, '--api', 'http://127.0.0.1:9'], cliDeps(io, fetch));
  const lines = (printed: string[]) => printed.flatMap((t) => t.split('\n'));
  return { exit, out: lines(io.outLines), err: lines(io.errLines), printed: io.outLines.join('\n') };
}

describe('control characters in what the API sends', () => {
  it('proxies list: no line holds one; the table shows each escaped', async () => {
    const r = await run(['proxies', 'list'], {
      proxies: [proxy],
      count: 1,
      skipped: { count: 1, names: [`broken${HOSTILE}`] },
    });
    expect(r.exit).toBe(0);
    expect([...r.out, ...r.err].filter((l) => CONTROL.test(l))).toEqual([]);
    expect(r.printed).toContain('label=demo\\u001b[2J\\u001b]0;pwned\\u0007\\u009b31m\\u007f');
    expect(r.err[0]).toContain('brokendemo\\u001b[2J');
  });

  // Escaped after the widths were measured, an ESC (one character, six shown) pushed its row's later
  // columns out of line.
  it('proxies list: the columns after an escaped cell still line up', async () => {
    const plain = { ...proxy, name: 'p2', spec: { ...proxy.spec, attributes: { label: 'demo' } } };
    const r = await run(['proxies', 'list'], { proxies: [proxy, plain], count: 2 });
    const ageAt = r.out.map((l) => l.lastIndexOf(' ') + 1);
    expect(new Set(ageAt).size).toBe(1);
  });

  it('jobs list: the job names Cloud Scheduler lacks, on stderr, escaped', async () => {
    const r = await run(['jobs', 'list'], { jobs: [], count: 0, missing: [HOSTILE] });
    expect([...r.out, ...r.err].filter((l) => CONTROL.test(l))).toEqual([]);
  });

  it("an error's message the API quoted: escaped on stderr", async () => {
    const r = await run(['proxies', 'get', 'p1'], { error: 'teapot', message: HOSTILE }, 418);
    expect(r.exit).toBe(1);
    expect(r.err.filter((l) => CONTROL.test(l))).toEqual([]);
    expect(r.err[0]).toContain('demo\\u001b[2J');
  });

  // The machine formats escape them in their own syntax: what a script reads back is the value sent.
  const fromYaml = (text: string): unknown => parse(text);
  const fromJson = (text: string): unknown => JSON.parse(text);
  it.each([
    ['proxies get (YAML)', ['proxies', 'get', 'p1'], fromYaml],
    ['-o yaml', ['proxies', 'get', 'p1', '-o', 'yaml'], fromYaml],
    ['-o json', ['proxies', 'get', 'p1', '-o', 'json'], fromJson],
  ])('%s: none raw, and the value reads back unchanged', async (_, argv, read) => {
    const r = await run(argv, proxy);
    expect(r.exit).toBe(0);
    expect(r.out.filter((l) => CONTROL_BUT_TAB.test(l))).toEqual([]);
    expect(read(r.printed)).toEqual(proxy);
  });
});
