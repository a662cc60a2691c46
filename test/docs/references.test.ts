// The docs against the code, by name. Docs rot silently when code is renamed or removed; this makes a
// rename that leaves a doc behind fail here, with the doc and the line. For every doc (README.md, docs/,
// emulators/*/README.md, terraform/README.md): relative links and their #anchors, `file.md § Section`
// references, repository paths (also shortened ones, tried from a short list of roots), `npm run` scripts
// and benches, environment variables, log events, metrics (Prometheus and log-based), identifiers in
// code style (error codes, fields, functions, bench metrics), `proxyplane` CLI commands and flags, job
// names, `METHOD /path` routes, and the imports of code examples. Each check lists every offender at
// once. File reads, plus loading a few modules (the CLI's help, the API and gateway apps built on stubs,
// the examples' imports): no emulator, no network. test/terraform/code-contract.test.ts checks a few doc
// facts in depth; this checks every name, shallowly.
import { readFileSync } from 'node:fs';
import { dirname, join, posix } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { USAGE } from '../../cli/usage.js';
import { loadScheduleTable } from '../../shared/src/config/topology.js';
import { loadModule, type TfConfig } from '../terraform/support/hcl.js';
import { repoRoot, terraformDir } from '../terraform/support/paths.js';
import {
  anchors,
  codeSpans,
  type Doc,
  docPaths,
  type Line,
  linkTargets,
  readDoc,
  sections,
  slug,
} from './support/markdown.js';
import { codeFiles, dirsOf, listFiles, readAll, repoFiles, topDirs } from './support/repo.js';

const docs: Doc[] = docPaths(repoRoot).map((p) => readDoc(repoRoot, p));
// What git tracks (a fresh clone), not whatever the working tree holds: see repoFiles.
const files = repoFiles(repoRoot);
const fileSet = new Set(files);
const dirSet = dirsOf(files);
/** A repository-relative file or directory (`.`: the root) of `files`. */
const inRepo = (rel: string) => rel === '.' || fileSet.has(rel) || dirSet.has(rel.replace(/\/$/, ''));
const names = new Set(files.map((f) => posix.basename(f)));
const code = readAll(repoRoot, codeFiles(files));
const codeText = [...code.values()].join('\n');
const TOP = topDirs(files);

/** Where a reference was found: `docs/gateway.md:120 \`token\``. */
const at = (doc: Doc, line: Line, what: string) => `${doc.path}:${line.n} ${what}`;

/** Every (doc, line, span) of the docs' prose. */
function* spans(): Generator<{ doc: Doc; line: Line; span: string }> {
  for (const doc of docs)
    for (const line of doc.lines) for (const span of codeSpans(line)) yield { doc, line, span };
}

// ---------------------------------------------------------------------------------------------------------
// Repository paths

/** Files a doc names that running the plane writes, so no checkout has them. */
const GENERATED = [
  '.local-plane/', // npm start's state: tokens, logs, the demo site's certificate (.gitignore)
  'bench/results/gateway-partial.json', // what `npm run bench -- gateway` writes when run on a subset
  'terraform/terraform.tfvars', // the operator's own copy of terraform.tfvars.example
];
/** Names a doc gives to files outside this repository. */
const EXTERNAL = [
  'seeds/', // the design handbook kept beside the repository (its seeds)
  '../shared/', // the same handbook, by its path relative to the repository
];
/** A bare file name that is runtime state, not a file of the repository. */
const GENERATED_NAMES = new Set([
  'state.json', // .local-plane/state.json (emulators/local-plane/README.md)
]);

/** A file name ending the docs use for repository files. */
const FILE_EXT = /\.(ts|mjs|js|json|tf|sh|md|hcl|yaml|yml|png|example)$/;

/**
 * The roots a shortened path is tried against, in order: the doc's own directory (markdown-relative),
 * the repository root, shared/ and shared/src/, each function's folder and src/, each emulator, and
 * terraform/, docs/ and test/. A path found under none of them is a failure.
 */
function roots(docPath: string): string[] {
  const under = (dir: string) => TOP.includes(dir.split('/')[0]!) && dirSet.has(dir);
  const fns = [...new Set(files.filter((f) => f.startsWith('functions/')).map((f) => f.split('/')[1]!))];
  const emus = [...new Set(files.filter((f) => f.startsWith('emulators/')).map((f) => f.split('/')[1]!))];
  return [
    dirname(docPath),
    '.',
    'shared',
    'shared/src',
    ...fns.flatMap((f) => [`functions/${f}`, `functions/${f}/src`]),
    ...emus.map((e) => `emulators/${e}`),
    'terraform',
    'docs',
    'test',
  ].filter((r) => r === '.' || r === dirname(docPath) || under(r));
}

/** `a/{b,c}.ts` → `a/b.ts`, `a/c.ts`; a `{name}` without a comma is a placeholder, not an expansion. */
function expand(token: string): string[] {
  const m = /\{([^{}]*,[^{}]*)\}/.exec(token);
  if (!m) return [token];
  return m[1]!
    .split(',')
    .flatMap((alt) => expand(token.slice(0, m.index) + alt + token.slice(m.index + m[0].length)));
}

/** Whether a repository-relative path (possibly with a `*` in its last segment) names something. */
function exists(rel: string): boolean {
  const norm = posix.normalize(rel).replace(/\/$/, '');
  if (norm.startsWith('..')) return false;
  if (!norm.includes('*')) return inRepo(norm);
  const re = new RegExp(`^${norm.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*')}$`);
  return files.some((f) => re.test(f));
}

type PathRef = { token: string; kind: 'path' | 'name' };

/** Classifies a token as a repository path, a bare file name, or neither (undefined). */
function pathRef(token: string): PathRef | undefined {
  const t = token.replace(/[.,;:]$/, '');
  if (/\s|:\/\/|^[/$@~]|[<>…[\]?=|]|^\.\.\.$/.test(t)) return undefined;
  if (/\{[^{},]*\}/.test(t)) return undefined; // a {placeholder}
  if (GENERATED.some((g) => t.startsWith(g)) || EXTERNAL.some((e) => t.startsWith(e))) return undefined;
  if (FILE_EXT.test(t)) {
    if (!t.includes('/')) return GENERATED_NAMES.has(t) ? undefined : { token: t, kind: 'name' };
    return { token: t, kind: 'path' };
  }
  // A directory: only when it clearly starts at the repository's top (`functions/gateway/src/`).
  if (t.includes('/') && TOP.includes(t.split('/')[0]!) && /^[\w./*-]+$/.test(t))
    return { token: t, kind: 'path' };
  return undefined;
}

/** An import path's `.js` names its TypeScript source (NodeNext resolution). */
const tsSource = (path: string) => path.replace(/\.js$/, '.ts');

function resolves(ref: PathRef, docPath: string): boolean {
  return expand(ref.token).every((t) =>
    ref.kind === 'name'
      ? t.includes('*')
        ? [...names].some((n) => new RegExp(`^${t.replace(/\./g, '\\.').replace(/\*/g, '.*')}$`).test(n))
        : names.has(t)
      : roots(docPath).some((r) => exists(posix.join(r, t)) || exists(posix.join(r, tsSource(t)))),
  );
}

/** Repository paths in fenced blocks and plain prose: only ones that start at a top-level directory. */
function barePaths(line: Line): string[] {
  const text = line.fenced ? line.text : line.text.replace(/`[^`\n]*`/g, ' ').replace(/\]\([^)]*\)/g, ']');
  const re = new RegExp(
    `(?<=^|[\\s"'(=,])(?:\\./)?((?:${TOP.join('|')})/[\\w./{},*-]*\\.(?:ts|mjs|js|json|tf|sh|md|hcl|yaml|yml))(?=$|[\\s"'),:;.])`,
    'g',
  );
  return [...text.matchAll(re)].map((m) => m[1]!);
}

// ---------------------------------------------------------------------------------------------------------
// Names in the code

/** ALL_CAPS_WITH_UNDERSCORES, the style of every variable the config loaders read. */
const ENV_NAME = /^[A-Z][A-Z0-9]*(?:_[A-Z0-9*]+)+$/;

/** Upper-case names the docs give that are not the code's to read, each with the reason it is named. */
const EXTERNAL_NAMES: Record<string, string> = {
  NODE_EXTRA_CA_CERTS: "Node's own: extra CAs the gateway's /v1/fetch trusts beside the system's",
  NODE_OPTIONS: "Node's own: where a V8 flag the gateway does not set would go",
  TCP_NODELAY: 'a socket option (setNoDelay), not a variable',
  ROTATED_AT: 'a dummy variable the rotation runbook sets only to force a new Cloud Run revision',
};

/** Candidate environment variable in a span: `NAME`, `$NAME`, `NAME=value`. */
function envName(span: string): string | undefined {
  const t = span.replace(/^\$/, '').replace(/=.*$/s, '');
  return ENV_NAME.test(t) ? t : undefined;
}

const words = new Set(codeText.match(/\b[A-Z][A-Z0-9_]*\b/g) ?? []);
function inCode(name: string): boolean {
  if (!name.includes('*')) return words.has(name);
  const re = new RegExp(`^${name.replace(/\*/g, '[A-Z0-9_]+')}$`);
  return [...words].some((w) => re.test(w));
}

/** The event names the code logs (`event: 'gateway.snapshot_pass'`), and their namespaces. */
const loggedEvents = new Set(
  [...code.entries()]
    .filter(([f]) => f.endsWith('.ts'))
    .flatMap(([, text]) => [...text.matchAll(/\bevent: '([a-z]+\.[a-z0-9_]+)'/g)].map((m) => m[1]!)),
);
/**
 * A log event's shape: `<namespace>.<what_happened>`, the namespace one the code logs under or a unit's
 * name (functions/<unit>), so an event of a namespace the code no longer logs under is still checked.
 */
const EVENT_NAMESPACES = new Set([
  ...[...loggedEvents].map((e) => e.split('.')[0]!),
  ...files.filter((f) => f.startsWith('functions/')).map((f) => f.split('/')[1]!),
]);
/** Dotted names in those namespaces that are JSON fields, not log events. */
const NOT_EVENTS: Record<string, string> = {
  'proxy.url': "a lease response's field (docs/leases.md)",
  'proxy.protocol': "a lease response's field (docs/leases.md)",
  'proxy.error': "the Compute emulator's admin view of an instance (emulators/compute/README.md)",
};
function eventName(span: string): string | undefined {
  const m = /^([a-z]+)\.([a-z][a-z0-9]*(?:_[a-z0-9]+)*)$/.exec(span);
  if (!m || FILE_EXT.test(span) || !EVENT_NAMESPACES.has(m[1]!) || span in NOT_EVENTS) return undefined;
  return span;
}
/** A string literal of the name (not a mention in a comment, which docs-style backticks would be). */
const quoted = (name: string) => new RegExp(`(['"])${name.replace(/\./g, '\\.')}\\1`);

const bare = (span: string) => span.replace(/\(\)$/, '').replace(/\{[^}]*\}$/, '');

/**
 * Identifiers in code style: a camelCase or PascalCase word (`steadyRefreshMs`, `LeaseApiError`), a
 * snake_case one (an error code `no_upstream`, a Terraform variable `drift_poll_seconds`), or a dotted
 * field path (`status.unreachableRoutes`). Env vars, events and metrics have their own checks.
 */
function identifier(span: string): string[] | undefined {
  const t = bare(span);
  if (!/^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*$/.test(t) || FILE_EXT.test(t)) return undefined;
  if (/\.(com|internal|io|net|org|dev|app|txt|tfvars)$/.test(t)) return undefined; // a host or file name
  if (envName(t) || eventName(t) || t.startsWith('proxyplane_')) return undefined; // checked as such
  const segments = t.split('.');
  const styled = (w: string) =>
    /[a-z][A-Z]/.test(w) || /^[A-Z][a-z0-9]+[A-Z]/.test(w) || /^[a-z][a-z0-9]*(?:_[a-z0-9]+)+$/.test(w);
  return segments.length > 1 || styled(t) ? segments : undefined;
}

/** Identifiers the docs give that are not this code's, each with why it is named. */
const EXTERNAL_IDENTIFIERS: Record<string, string> = {
  CloudPubSubDeadLetterSourceDeliveryCount: "Pub/Sub's attribute on a dead-lettered message",
  lease_requests_total: "the seed operator's metric, beside the one that replaces it (architecture.md)",
  proxy_operator_leases_active:
    "the seed operator's metric, beside the one that replaces it (architecture.md)",
  leaseID: "the seed operator's field of a lease grant, beside the one that replaces it (leases.md)",
  epoll_wait: 'a Linux system call in a profile of the gateway (gateway.md)',
  epoll_pwait: 'a Linux system call in a profile of the gateway (gateway.md)',
  epoll_ctl: 'a Linux system call in a profile of the gateway (gateway.md)',
  w_life: "cost.md's symbol for the writes of one proxy lifecycle",
};

/** zod's issue codes, which the API's 400 answers carry (docs/api.md), from zod's own source. */
function zodIssueCodes(): Set<string> {
  const dir = join(repoRoot, 'node_modules/zod/v4/core');
  const out = new Set<string>();
  for (const f of listFiles(dir).filter((f) => f.endsWith('.js')))
    for (const m of readFileSync(join(dir, f), 'utf8').matchAll(/\bcode: "([a-z_]+)"/g)) out.add(m[1]!);
  return out;
}

/** The metrics the committed bench results report (`npm run bench -- <name>` writes bench/results/). */
function benchMetrics(): Set<string> {
  return new Set(
    files
      .filter((f) => /^bench\/results\/[\w-]+\.json$/.test(f))
      .flatMap((f) => Object.keys(JSON.parse(readFileSync(join(repoRoot, f), 'utf8')).metrics ?? {})),
  );
}

// ---------------------------------------------------------------------------------------------------------

describe('the docs name only what exists', () => {
  let tf: TfConfig;
  beforeAll(async () => {
    tf = await loadModule(terraformDir);
  });

  it('reads the whole docs set', () => {
    expect(docs.map((d) => d.path)).toEqual(expect.arrayContaining(['README.md', 'docs/gateway.md']));
    expect(docs.length).toBeGreaterThan(10);
  });

  it('every relative link resolves to a file, and every #anchor to a heading of it', () => {
    const bad: string[] = [];
    let n = 0;
    for (const doc of docs)
      for (const line of doc.lines)
        for (const target of linkTargets(line)) {
          if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:
          n++;
          const [file, anchor] = target.split('#') as [string, string | undefined];
          const path = file
            ? posix.normalize(posix.join(posix.dirname(doc.path), decodeURI(file)))
            : doc.path;
          if (!inRepo(path)) {
            bad.push(at(doc, line, `(${target}): no ${path}`));
            continue;
          }
          if (anchor === undefined) continue;
          if (!path.endsWith('.md')) {
            bad.push(at(doc, line, `(${target}): an anchor into a file that is not markdown`));
            continue;
          }
          if (!anchors(readDoc(repoRoot, path)).has(anchor))
            bad.push(at(doc, line, `(${target}): ${path} has no heading with that anchor`));
        }
    expect(n).toBeGreaterThan(20);
    expect(bad).toEqual([]);
  });

  it('every `file.md § Section` (or `§ Section` of the same doc) names a heading (or a bold run-in head) of it', () => {
    const bad: string[] = [];
    let n = 0;
    /** One heading's slug and a reference's are the same words, or one begins with the other's words. */
    const sameWords = (a: string, b: string) => a === b || a.startsWith(`${b}-`) || b.startsWith(`${a}-`);
    for (const doc of docs) {
      // The prose as one text (a reference may wrap), links reduced to their text, code marks dropped.
      const prose = doc.lines.map((l) => (l.fenced ? '' : l.text)).join('\n');
      const text = prose.replace(/\]\([^)]*\)/g, ']').replace(/[`[\]]/g, '');
      const lineOf = (offset: number) => doc.lines[text.slice(0, offset).split('\n').length - 1]!;
      for (const m of text.matchAll(
        /(?:([\w/.-]+\.md)\)?,?\s+)?§\s+([^.,;:)|\n]+(?:\n\s*[^.,;:)|\n§#]+)?)/g,
      )) {
        const file = m[1];
        const section = m[2]!
          .replace(/\s+/g, ' ')
          .replace(/[\s\p{P}]+$/u, '')
          .replace(/ (below|above)$/, '');
        if (/^\d/.test(section) || (file && EXTERNAL.some((e) => file.startsWith(e)))) continue; // the seed's §7
        const line = lineOf(m.index);
        const path = file
          ? roots(doc.path)
              .map((r) => posix.join(r, file))
              .find((p) => fileSet.has(p))
          : doc.path;
        n++;
        if (!path) {
          bad.push(at(doc, line, `${file} § ${section}: no such file`));
          continue;
        }
        const wanted = slug(section);
        if (!sections(readDoc(repoRoot, path)).some((h) => sameWords(slug(h), wanted)))
          bad.push(at(doc, line, `${file ? `${file} ` : ''}§ ${section}: no such section in ${path}`));
      }
    }
    expect(n).toBeGreaterThan(30);
    expect(bad).toEqual([]);
  });

  it('every repository path a doc names exists (tried from the repository root and the package roots)', () => {
    const bad: string[] = [];
    let n = 0;
    const check = (doc: Doc, line: Line, token: string, ref = pathRef(token)) => {
      if (!ref) return;
      n++;
      if (!resolves(ref, doc.path)) bad.push(at(doc, line, `\`${token}\``));
    };
    for (const { doc, line, span } of spans()) check(doc, line, span);
    for (const doc of docs)
      for (const line of doc.lines) for (const p of barePaths(line)) check(doc, line, p);
    expect(n).toBeGreaterThan(200);
    expect(bad).toEqual([]);
  });

  it('every `npm run` script exists in package.json, and every `npm run bench -- <name>` is a bench', () => {
    const scripts = Object.keys(JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')).scripts);
    const bad: string[] = [];
    let n = 0;
    for (const doc of docs)
      for (const line of doc.lines)
        for (const m of line.text.matchAll(
          /\bnpm (run(?:-script)?|start|test)\b(?: ([\w:.-]+))?(?: -- ([\w<>-]+))?/g,
        )) {
          const script = m[1] === 'start' || m[1] === 'test' ? m[1] : m[2];
          if (!script) continue;
          n++;
          if (!scripts.includes(script)) {
            bad.push(at(doc, line, `npm run ${script}: no such script`));
            continue;
          }
          const bench = script === 'bench' ? m[3] : undefined;
          if (bench && !bench.startsWith('<')) {
            const file = `bench/${bench}.ts`;
            // bench/main.ts runs bench/<name>.ts's default export.
            if (!fileSet.has(file) || !/export default /.test(readFileSync(join(repoRoot, file), 'utf8')))
              bad.push(
                at(doc, line, `npm run bench -- ${bench}: no bench/${bench}.ts with a default export`),
              );
          }
        }
    expect(n).toBeGreaterThan(10);
    expect(bad).toEqual([]);
  });

  it('every environment variable a doc names is one the code reads or sets', () => {
    const bad: string[] = [];
    let n = 0;
    for (const { doc, line, span } of spans()) {
      const name = envName(span);
      if (!name || name in EXTERNAL_NAMES) continue;
      n++;
      if (!inCode(name)) bad.push(at(doc, line, `\`${span}\``));
    }
    expect(n).toBeGreaterThan(100);
    // Each allow-listed name is still named by a doc (an entry nothing needs is removed).
    const named = new Set([...spans()].map(({ span }) => envName(span)));
    expect(Object.keys(EXTERNAL_NAMES).filter((k) => !named.has(k))).toEqual([]);
    expect(bad).toEqual([]);
  });

  it('every log event a doc names is logged by the code', () => {
    const tsCode = [...code.entries()].filter(([f]) => f.endsWith('.ts')).map(([, t]) => t);
    expect(loggedEvents.size).toBeGreaterThan(10);
    const bad: string[] = [];
    let n = 0;
    for (const { doc, line, span } of spans()) {
      const event = eventName(span);
      if (!event) continue;
      n++;
      if (!loggedEvents.has(event) && !tsCode.some((t) => quoted(event).test(t)))
        bad.push(at(doc, line, `\`${span}\``));
    }
    expect(n).toBeGreaterThan(15);
    expect(bad).toEqual([]);
  });

  it('every metric a doc names is registered: Prometheus names in the code, log-based ones in Terraform', () => {
    const tfVariables = new Set(Object.keys(tf.variable));
    // Log-based metrics: proxyplane/<key> for each log counter, proxyplane/gateway_<key> for each
    // gateway.traffic field, and the literal names.
    // biome-ignore lint/suspicious/noTemplateCurlyInString: Terraform's interpolation, as hcl2json gives it.
    expect(tf.resource.google_logging_metric?.gateway_traffic?.name).toBe('proxyplane/gateway_${each.key}');
    const logMetrics = new Set([
      ...Object.keys(tf.locals.log_counters as object),
      ...Object.keys(tf.locals.gateway_traffic as object).map((k) => `gateway_${k}`),
      ...Object.values(tf.resource.google_logging_metric ?? {})
        .map((m) => /^proxyplane\/(\w+)$/.exec(String(m.name))?.[1])
        .filter((m): m is string => m !== undefined),
    ]);
    const tsCode = [...code.entries()].filter(([f]) => f.endsWith('.ts')).map(([, t]) => t);
    const defaults = collectDefaults();
    /** `proxyplane/…` names that are not metrics. */
    const notMetrics: Record<string, string> = {
      'proxyplane/startup': "the proxy VM startup script's guest attribute (docs/cloud-init.md)",
    };
    const bad: string[] = [];
    let n = 0;
    for (const { doc, line, span } of spans()) {
      const name = span.replace(/\{[^}]*\}$/, '');
      const log = /^proxyplane\/([a-z_]+)$/.exec(name)?.[1];
      if (log !== undefined && !(name in notMetrics)) {
        n++;
        if (!logMetrics.has(log)) bad.push(at(doc, line, `\`${span}\`: no such log-based metric`));
        continue;
      }
      if (!/^[a-z]+(?:_[a-z0-9]+)+$/.test(name)) continue;
      const ours = name.startsWith('proxyplane_') || (name.startsWith('gateway_') && !tfVariables.has(name));
      const prom = /^(nodejs|process)_/.test(name);
      if (!ours && !prom) continue;
      n++;
      if (ours && !tsCode.some((t) => quoted(name).test(t)))
        bad.push(at(doc, line, `\`${span}\`: no metric of that name is registered`));
      if (prom && !defaults.has(name))
        bad.push(at(doc, line, `\`${span}\`: not one of prom-client's defaults`));
    }
    expect(n).toBeGreaterThan(15);
    expect(bad).toEqual([]);
  });

  it('every identifier a doc names in code style is a word of the code (or a metric a bench reports)', () => {
    const known = new Set([
      ...(codeText.match(/\b[A-Za-z_]\w*\b/g) ?? []),
      ...benchMetrics(),
      ...zodIssueCodes(),
      ...collectDefaults(),
    ]);
    /** A code the code composes, like `socks_reply_${a.reply}`: `socks_reply_5` is one of them. */
    const composed = (w: string) => {
      const prefix = /^([a-z][a-z0-9_]*_)\d+$/.exec(w)?.[1];
      return prefix !== undefined && codeText.includes(`${prefix}\${`);
    };
    const bad: string[] = [];
    let n = 0;
    for (const { doc, line, span } of spans()) {
      const segments = identifier(span);
      if (!segments || bare(span) in EXTERNAL_IDENTIFIERS) continue;
      n++;
      const missing = segments.filter((w) => !known.has(w) && !composed(w));
      if (missing.length)
        bad.push(at(doc, line, `\`${span}\`${segments.length > 1 ? ` (${missing.join(', ')})` : ''}`));
    }
    expect(n).toBeGreaterThan(300);
    const named = new Set([...spans()].map(({ span }) => bare(span)));
    expect(Object.keys(EXTERNAL_IDENTIFIERS).filter((k) => !named.has(k))).toEqual([]);
    expect(bad).toEqual([]);
  });

  it('every `proxyplane` command and flag a doc gives is one the CLI has, and every job it names is scheduled', () => {
    // The CLI's own help (cli/usage.ts): "  <group> <verb>|<verb> …" lines and every flag it lists.
    const commands = new Set(
      [...USAGE.matchAll(/^ {2}([a-z]+) ([a-z|]+)/gm)].flatMap((m) =>
        m[2]!.split('|').map((v) => `${m[1]} ${v}`),
      ),
    );
    const flags = new Set(USAGE.match(/(?<=[\s[,])--?[a-z][a-z-]*/g));
    const jobs = new Set(Object.keys(loadScheduleTable().jobs));
    expect(commands.size).toBeGreaterThan(8);
    const bad: string[] = [];
    let n = 0;
    const checkJob = (doc: Doc, line: Line, name: string | undefined) => {
      if (name === undefined || /[A-Z<{…$]/.test(name)) return; // NAME, <name>, {list,…}: placeholders
      n++;
      if (!jobs.has(name)) bad.push(at(doc, line, `job ${name}: not in shared/topology/schedules.json`));
    };
    for (const doc of docs)
      for (const line of doc.lines) {
        // A command: a fenced line that runs it, or a code span that is one.
        const texts = line.fenced ? [line.text.replace(/#.*$/, '')] : codeSpans(line);
        for (const text of texts) {
          const m = /^(?:eval "\$\()?(?:npx )?proxyplane ([a-z]+)(?: ([a-z|]+))?(.*)$/.exec(text.trim());
          if (!m) continue;
          const [, group, verbs, rest] = m as unknown as [string, string, string | undefined, string];
          n++;
          const unknown = (verbs ?? '')
            .split('|')
            .filter((v) => v && !commands.has(`${group} ${v}`))
            .concat([...commands].some((c) => c.startsWith(`${group} `)) ? [] : [group]);
          if (unknown.length) bad.push(at(doc, line, `proxyplane ${group} ${verbs ?? ''}: no such command`));
          for (const flag of rest.match(/(?<=^|\s)--?[a-z][a-z-]*/g) ?? [])
            if (!flags.has(flag))
              bad.push(at(doc, line, `proxyplane ${group} ${verbs} ${flag}: no such flag`));
          if (group === 'jobs' && verbs && verbs !== 'list') checkJob(doc, line, rest.trim().split(/\s+/)[0]);
        }
        for (const g of line.text.matchAll(/gcloud scheduler jobs (?:run|pause|resume|describe) ([\w-]+)/g))
          checkJob(doc, line, g[1]);
      }
    expect(n).toBeGreaterThan(20);
    expect(bad).toEqual([]);
  });

  it("every import in a doc's code example names a module of the repository and an export of it", async () => {
    const bad: string[] = [];
    let n = 0;
    for (const doc of docs)
      for (const line of doc.lines) {
        if (!line.fenced) continue;
        const m = /^\s*import\s+\{([^}]+)\}\s+from\s+'([^']+)'/.exec(line.text);
        if (!m || !/^(\.|[a-z]+\/)/.test(m[2]!) || m[2]!.startsWith('node:')) continue;
        n++;
        const spec = m[2]!;
        // Written from the repository root (`./functions/…`, `shared/…`) or from the doc (`../shared/…`).
        const file = roots(doc.path)
          .map((r) => posix.join(r, tsSource(spec)))
          .find((f) => fileSet.has(f));
        if (!file) {
          bad.push(at(doc, line, `import … from '${spec}': no such module`));
          continue;
        }
        const mod = (await import(join(repoRoot, file))) as Record<string, unknown>;
        for (const name of m[1]!
          .split(',')
          .map((x) => x.trim().split(/\s+as\s+/)[0]!)
          .filter(Boolean))
          if (!(name in mod))
            bad.push(at(doc, line, `import { ${name} } from '${spec}': not exported by ${file}`));
      }
    expect(n).toBeGreaterThan(5);
    expect(bad).toEqual([]);
  });

  it('every `METHOD /path` a doc gives is a route of the API or of the gateway', async () => {
    const { createApp } = await import('../../functions/api/src/app.js');
    const { createHttpApp } = await import('../../functions/gateway/src/http-app.js');
    // Building the apps only registers routes: a stub stands in for every dependency, and every optional
    // part of the API (leases, echo, workers, fleet, jobs) is mounted.
    const stub: unknown = new Proxy(() => {}, {
      get: (_t, k) => {
        if (k === 'then') return undefined; // not a promise
        if (k === Symbol.iterator) return function* () {}; // an empty list of tokens
        if (k === Symbol.toPrimitive) return () => ''; // an empty string
        return stub;
      },
      apply: () => stub,
      construct: () => stub as object,
    });
    const deps = {
      version: 'docs',
      ...Object.fromEntries(
        ['store', 'publisher', 'clock', 'auth', 'log', 'leases', 'echo', 'workers', 'fleet', 'jobs'].map(
          (k) => [k, stub],
        ),
      ),
    };
    const routes = [
      ...createApp(deps as Parameters<typeof createApp>[0]).routes,
      ...createHttpApp(stub as Parameters<typeof createHttpApp>[0]).routes,
    ]
      .filter((r) => r.method !== 'ALL')
      .map((r) => ({ method: r.method, path: new RegExp(`^${r.path.replace(/:\w+/g, '[^/]+')}$`) }));
    // POST /v1/fetch is served natively, beside the gateway's Hono app (http-app.ts, createHttpListener).
    if (readFileSync(join(repoRoot, 'functions/gateway/src/http-app.ts'), 'utf8').includes("=== '/v1/fetch'"))
      routes.push({ method: 'POST', path: /^\/v1\/fetch$/ });
    expect(routes.length).toBeGreaterThan(30);
    const bad: string[] = [];
    let n = 0;
    for (const { doc, line, span } of spans()) {
      const m = /^((?:GET|POST|PUT|PATCH|DELETE)(?:\/(?:GET|POST|PUT|PATCH|DELETE))*) (\/[^\s?[]*)/.exec(
        span,
      );
      if (!m || m[2]!.includes('…')) continue;
      // `…/workers\|ownership`, `…:run\|:pause`: alternatives for the last segment or the last `:action`.
      const [first, ...alts] = m[2]!.split('\\|');
      const paths = [
        first!,
        ...alts.map((a) => first!.replace(a.startsWith(':') ? /:[^/:]*$/ : /[^/]*$/, a)),
      ];
      for (const method of m[1]!.split('/'))
        for (const path of paths) {
          n++;
          if (!routes.some((r) => r.method === method && r.path.test(path)))
            bad.push(at(doc, line, `${method} ${path}: no such route`));
        }
    }
    expect(n).toBeGreaterThan(50);
    expect(bad).toEqual([]);
  });
});

/** prom-client's default metrics (collectDefaultMetrics, which the gateway calls), from its own source. */
function collectDefaults(): Set<string> {
  if (!/collectDefaultMetrics\(/.test(codeText)) return new Set();
  const dir = join(repoRoot, 'node_modules/prom-client/lib/metrics');
  const out = new Set<string>();
  for (const f of listFiles(dir))
    for (const m of readFileSync(join(dir, f), 'utf8').matchAll(/'((?:nodejs|process)_[a-z_]+)'/g))
      out.add(m[1]!);
  return out;
}
