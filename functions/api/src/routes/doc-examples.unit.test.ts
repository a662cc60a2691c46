// The admin API's curl examples in README.md and docs/api.md, run in document order against the app (an
// in-memory store): what a new user pastes first must be accepted as the docs say — a create is 201, a
// read 200, a PATCH or PUT 200, a DELETE 202. A body that drifts from the schema (a renamed field, a
// managed spec without credentials) fails here rather than in someone's first terminal session.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { harness } from '../testing/harness.js';

interface Call {
  doc: string;
  method: string;
  path: string;
  contentType?: string;
  body?: string;
}

/** Shell words of one command: '…' and "…" quoting, a `#` comment ends it. */
function words(command: string): string[] {
  const out: string[] = [];
  const re = /'([^']*)'|"((?:[^"\\]|\\.)*)"|(#.*$)|(\S+)/gs;
  for (const m of command.matchAll(re)) {
    if (m[3] !== undefined) break;
    out.push(m[1] ?? m[2] ?? m[4] ?? '');
  }
  return out;
}

/** Commands of a bash block: lines joined over a trailing `\` and over a quote left open. */
function commands(block: string): string[] {
  const out: string[] = [];
  let current = '';
  for (const line of block.split('\n')) {
    current = current ? `${current}\n${line}` : line;
    const open = (current.replace(/"(?:[^"\\]|\\.)*"/g, '').match(/'/g)?.length ?? 0) % 2 === 1;
    if (open) continue;
    if (current.endsWith('\\')) {
      current = current.slice(0, -1);
      continue;
    }
    out.push(current);
    current = '';
  }
  return out;
}

/** Every curl of a bash block that calls the admin proxy routes at $API. */
function adminCalls(doc: string): Call[] {
  const text = readFileSync(new URL(`../../../../${doc}`, import.meta.url), 'utf8');
  const calls: Call[] = [];
  for (const [, block = ''] of text.matchAll(/```bash\n(.*?)```/gs)) {
    for (const command of commands(block)) {
      const w = words(command.trim());
      if (w[0] !== 'curl') continue;
      const url = w.find((x) => x.startsWith('$API/v1/proxies'));
      if (!url) continue;
      const at = (flag: string) => (w.includes(flag) ? w[w.indexOf(flag) + 1] : undefined);
      const headers = w.filter((_, i) => w[i - 1] === '-H').map((h) => h.toLowerCase());
      calls.push({
        doc,
        method: at('-X') ?? 'GET',
        path: url.slice('$API'.length),
        contentType: headers
          .find((h) => h.startsWith('content-type:'))
          ?.split(':')[1]
          ?.trim(),
        body: at('-d'),
      });
    }
  }
  return calls;
}

const expected: Record<string, number> = { GET: 200, POST: 201, PATCH: 200, PUT: 200, DELETE: 202 };

describe.each(['README.md', 'docs/api.md'])('the admin curl examples of %s', (doc) => {
  const calls = adminCalls(doc);

  it('are found (the parser still reads the document)', () => {
    expect(calls.map((c) => c.method)).toContain('POST');
  });

  it('each answer as documented, in document order', async () => {
    const h = harness();
    for (const call of calls) {
      const res = await h.app.request(call.path, {
        method: call.method,
        headers: { ...h.auth, ...(call.contentType ? { 'content-type': call.contentType } : {}) },
        body: call.body,
      });
      const what = `${call.doc}: ${call.method} ${call.path} ${call.body ?? ''}`;
      expect(res.status, `${what} → ${await res.clone().text()}`).toBe(expected[call.method]);
    }
  });
});
