// The admin API's curl examples in README.md and docs/api.md, run in document order against the app (an
// in-memory store): what a new user pastes first must be accepted as the docs say — a create is 201, a
// read 200, a PATCH or PUT 200, a DELETE 202. A body that drifts from the schema (a renamed field, a
// managed spec without credentials) fails here rather than in someone's first terminal session. The
// README's lease bodies are checked against the lease routes' own schemas (the routes themselves, with
// Firestore, are test/integration/leases-api.test.ts's).
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { AcquireRequest, RenewRequest, ReportRequest } from '../../../../shared/src/domain/leases/wire.js';
import { harness } from '../testing/harness.js';

interface Call {
  doc: string;
  method: string;
  path: string;
  contentType?: string;
  body?: string;
}

/** Shell words of one command (comments already gone): '…' and "…" quoting. */
function words(command: string): string[] {
  return [...command.matchAll(/'([^']*)'|"((?:[^"\\]|\\.)*)"|(\S+)/gs)].map(
    (m) => m[1] ?? m[2] ?? m[3] ?? '',
  );
}

/**
 * Commands of a bash block, without their comments: a line continues over a trailing `\` and while a quote
 * is open; an unquoted `#` at the start of a word starts a comment to the end of the line.
 */
function commands(block: string): string[] {
  const out: string[] = [];
  let current = '';
  let quote: string | null = null;
  for (let i = 0; i < block.length; i++) {
    const ch = block[i] ?? '';
    if (quote) {
      if (ch === '\\' && quote === '"') {
        current += ch + (block[++i] ?? '');
        continue;
      }
      if (ch === quote) quote = null;
      current += ch;
    } else if (ch === "'" || ch === '"') {
      quote = ch;
      current += ch;
    } else if (ch === '#' && /(^|\s)$/.test(current)) {
      while (i + 1 < block.length && block[i + 1] !== '\n') i++;
    } else if (ch === '\\' && block[i + 1] === '\n') {
      i++;
    } else if (ch === '\n') {
      if (current.trim()) out.push(current.trim());
      current = '';
    } else {
      current += ch;
    }
  }
  if (current.trim()) out.push(current.trim());
  return out;
}

/** Every curl of a bash block of `doc` that calls $API at a path starting with `prefix`. */
function curlCalls(doc: string, prefix: string): Call[] {
  const text = readFileSync(new URL(`../../../../${doc}`, import.meta.url), 'utf8');
  const calls: Call[] = [];
  const arrays = new Map<string, string[]>(); // C=(-H … -H …), used as "${C[@]}"
  for (const [, block = ''] of text.matchAll(/```bash\n(.*?)```/gs)) {
    for (const command of commands(block)) {
      const array = /^(\w+)=\((.*)\)$/s.exec(command);
      if (array) arrays.set(array[1] ?? '', words(array[2] ?? ''));
      const w = words(command).flatMap((x) => arrays.get(/^\$\{(\w+)\[@\]\}$/.exec(x)?.[1] ?? '') ?? [x]);
      if (w[0] !== 'curl') continue;
      const url = w.find((x) => x.startsWith(`$API${prefix}`));
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
  const calls = curlCalls(doc, '/v1/proxies');

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

describe('the lease curl examples of README.md', () => {
  const calls = curlCalls('README.md', '/v1/leases');
  const schemaOf = (path: string): z.ZodType =>
    path.endsWith('/renew') ? RenewRequest : path.endsWith('/report') ? ReportRequest : AcquireRequest;

  it('acquire, renew and report, each with a body its route accepts', () => {
    const withBody = calls.filter((c) => c.body !== undefined);
    expect(withBody.map((c) => schemaOf(c.path))).toEqual([AcquireRequest, RenewRequest, ReportRequest]);
    for (const call of withBody) {
      const parsed = schemaOf(call.path).safeParse(JSON.parse(call.body ?? ''));
      expect(parsed.error?.issues, `README.md: ${call.method} ${call.path} ${call.body}`).toBeUndefined();
      expect(call.contentType).toBe('application/json');
    }
  });
});
