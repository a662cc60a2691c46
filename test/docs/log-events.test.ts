// The log events as the docs describe them, against the calls that log them. references.test.ts checks
// that every event a doc names is logged; this checks the rest of what an operator reads: that every
// event the code logs is named in some doc (an undocumented event is one nobody will query for), that the
// fields a doc gives an event (`gateway.snapshot_built {workerId, version, …}`) are fields of its log
// call, and that a severity written beside it ("(WARNING)", "at ERROR") is the level it is logged at.
// The events Terraform counts are held to their fields at run time (shared/src/testing/log-contract.ts);
// here the check is on the source text, so a field from a child logger or an unresolved spread is
// allowed where the call cannot show it.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { LOG_CONTRACT } from '../../shared/src/testing/log-contract.js';
import { repoRoot } from '../terraform/support/paths.js';
import { docPaths } from './support/markdown.js';
import { codeFiles, repoFiles } from './support/repo.js';

interface LogCall {
  file: string;
  level: string | undefined;
  /** Keys of the call's fields literal, plus those of spreads resolved in the same file. */
  keys: Set<string>;
  /** A spread whose keys the text cannot show (`...summary`): its fields cannot be checked here. */
  opaque: boolean;
}

const SEVERITY: Record<string, string> = { debug: 'DEBUG', info: 'INFO', warn: 'WARNING', error: 'ERROR' };

/** The `{ … }` around position `at`: back to its unmatched `{`, forward to the matching `}`. */
function enclosingObject(text: string, at: number): string {
  let depth = 0;
  let start = at;
  for (; start >= 0; start--) {
    const c = text[start];
    if (c === '}') depth++;
    if (c === '{') {
      if (depth === 0) break;
      depth--;
    }
  }
  depth = 0;
  let end = start;
  for (; end < text.length; end++) {
    if (text[end] === '{') depth++;
    if (text[end] === '}' && --depth === 0) break;
  }
  return text.slice(start, end + 1);
}

/** Top-level keys of an object literal's text (`a: …`, shorthand `a`), and its spreads' names. */
function keysOf(literal: string): { keys: string[]; spreads: string[] } {
  let depth = 0;
  let top = '';
  // A comment line between two keys would otherwise hide the key after it.
  for (const c of literal.slice(1, -1).replace(/^\s*\/\/.*$/gm, '')) {
    if ('{[('.includes(c)) depth++;
    if ('}])'.includes(c)) depth--;
    top += depth === 0 ? c : ' ';
  }
  const parts = top.split(',').map((p) => p.trim());
  const keys = parts.flatMap((p) => /^(\w+)\s*(?::|$)/.exec(p)?.[1] ?? []);
  const spreads = parts.flatMap((p) => /^\.\.\.(\w+)/.exec(p)?.[1] ?? []);
  return { keys, spreads };
}

function logCalls(): Map<string, LogCall[]> {
  const calls = new Map<string, LogCall[]>();
  const files = codeFiles(repoFiles(repoRoot)).filter(
    (f) => /^(functions\/[^/]+\/src|shared\/src)\//.test(f) && f.endsWith('.ts') && !f.endsWith('.test.ts'),
  );
  for (const file of files) {
    const text = readFileSync(join(repoRoot, file), 'utf8');
    for (const m of text.matchAll(/\bevent: '([a-z]+\.[a-z0-9_]+)'/g)) {
      const literal = enclosingObject(text, m.index!);
      const before = text.slice(0, m.index! - literal.indexOf('event:'));
      const level = /\.(debug|info|warn|error)\(\s*(?:'[^']*'|`[^`]*`)\s*,\s*$/.exec(before)?.[1];
      const { keys, spreads } = keysOf(literal);
      let opaque = false;
      for (const s of spreads) {
        // `const s = { … }` or `const s = (…) => ({ … })` in the same file.
        const def = new RegExp(`const ${s} = (?:\\([^)]*\\)(?:: \\w+)? => \\()?\\{`).exec(text);
        if (def) keys.push(...keysOf(enclosingObject(text, def.index + def[0].length)).keys);
        else opaque = true;
      }
      const list = calls.get(m[1]!) ?? [];
      list.push({ file, level, keys: new Set(keys), opaque });
      calls.set(m[1]!, list);
    }
  }
  return calls;
}

const calls = logCalls();
/** Every doc as one text, lines joined: a mention may wrap. */
const docs = docPaths(repoRoot).map((path) => ({
  path,
  text: readFileSync(join(repoRoot, path), 'utf8').replace(/\s*\n\s*/g, ' '),
}));

/** Each mention of an event in the docs, with the fields and the severity written beside it. */
function mentions(event: string) {
  const e = event.replace('.', '\\.');
  const re = new RegExp(
    `\`${e}(?: \\{([^}\`]*)\\})?\`(?: \\{([^}]*)\\})?(?: \\(([A-Z]+)\\b| (?:logged )?at ([A-Z]+)\\b)?`,
    'g',
  );
  return docs.flatMap(({ path, text }) =>
    [...text.matchAll(re)].map((m) => {
      const fieldText = m[1] ?? m[2];
      const fields = fieldText
        ?.split(',')
        .map((f) => f.trim())
        .filter((f) => /^\w+$/.test(f));
      // "(WARNING)" or "at WARNING" after the mention, or "logged at ERROR as" before it.
      const before = text.slice(Math.max(0, m.index! - 40), m.index!);
      const severity = m[3] ?? m[4] ?? /\bat ([A-Z]+) as $/.exec(before)?.[1];
      return { path, fields: fields ?? [], severity };
    }),
  );
}

describe('the log events the docs describe are the ones the code logs', () => {
  it('finds the log calls (the scan works)', () => {
    expect(calls.size).toBeGreaterThan(15);
    expect(calls.get('gateway.snapshot_built')?.[0]?.level).toBe('info');
    expect(calls.get('gateway.snapshot_built')?.[0]?.keys).toContain('bytes');
    expect(calls.get('gc.deleted')?.[0]?.keys).toContain('zone'); // through `...fields`
  });

  it('every event the code logs is named in a doc', () => {
    const named = (e: string) =>
      docs.some((d) => d.text.includes(`\`${e}`) || d.text.includes(`\`event=${e}`));
    const undocumented = [...calls.keys()].filter((e) => !named(e));
    expect(undocumented).toEqual([]);
  });

  it("the fields a doc gives an event are fields of its log call (or come from the caller's logger)", () => {
    const bad: string[] = [];
    for (const [event, list] of calls) {
      if (list.some((c) => c.opaque)) continue;
      const logged = new Set(list.flatMap((c) => [...c.keys]));
      // Fields a child logger adds (`proxy` on reconcile's), which the run-time contract checks.
      const contract = (LOG_CONTRACT as Record<string, readonly string[]>)[event] ?? [];
      for (const m of mentions(event))
        for (const f of m.fields)
          if (!logged.has(f) && !contract.includes(f)) bad.push(`${m.path}: ${event} {${f}}`);
    }
    expect(bad).toEqual([]);
  });

  it('a severity written beside an event is the level it is logged at', () => {
    const bad: string[] = [];
    let n = 0;
    for (const [event, list] of calls) {
      const levels = new Set(list.map((c) => (c.level ? SEVERITY[c.level] : undefined)));
      for (const m of mentions(event)) {
        if (!m.severity || !Object.values(SEVERITY).includes(m.severity)) continue;
        n++;
        if (!levels.has(m.severity))
          bad.push(`${m.path}: ${event} (${m.severity}), logged at ${[...levels]}`);
      }
    }
    expect(n).toBeGreaterThan(3);
    expect(bad).toEqual([]);
  });
});
