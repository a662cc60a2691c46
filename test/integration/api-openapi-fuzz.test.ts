// Invariant 6 for the whole service, driven by its own description: every operation in the served
// /openapi.json (the admin routes, discovery, leases, the gateway workers' and admin routes, the jobs, the
// fleet page's JSON, /healthz, /v1/echo), plus the routes the document leaves out on purpose (/openapi.json,
// /metrics, the fleet page's HTML, assets, login form and event stream), gets hostile input generated from
// the document's schemas — malformed JSON, JSON of the wrong type at the root and in every field, missing
// required fields, unknown fields, NUL bytes and lone surrogates in strings and path parameters, path
// parameters that are no ids, bodies over each limit, deep nesting, wrong media types, bad query
// parameters and page tokens, unsupported methods, missing/invalid/expired credentials and credentials of
// the wrong kind. Each must be a 4xx with the `Error` envelope and a code the document names for that
// operation and status (or the service-wide 404 not_found / 405 method_not_allowed), never a 5xx or a
// hang, and change nothing: every Firestore document as stored (update times included), no reconcile
// request, no snapshot request or worker subscription on Pub/Sub, no Cloud Scheduler call.
// One app instance on a real socket; requests go out as exact bytes (node:http).

import { request } from 'node:http';
import { Firestore } from '@google-cloud/firestore';
import type { Message, Subscription } from '@google-cloud/pubsub';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildAuthenticator } from '../../functions/api/src/auth/config.js';
import { InMemoryFleetFeed } from '../../functions/api/src/fleet/feed.js';
import {
  InMemoryJobRuns,
  InMemoryJobScheduler,
} from '../../functions/api/src/jobs/testing/in-memory-jobs.js';
import { buildLeaseApi, type LeaseApiRuntime } from '../../functions/api/src/leases/wiring.js';
import { refusesBody } from '../../functions/api/src/routes/openapi-no-body.js';
import { type ApiServer, startApiServer } from '../../functions/api/src/server.js';
import {
  type CertsServer,
  googleClaims,
  newSigningKey,
  signJwt,
  startCertsServer,
} from '../../functions/api/src/testing/google-certs.js';
import { loadWorkersApiConfig } from '../../functions/api/src/workers/config.js';
import type { RateLimiter } from '../../functions/api/src/workers/rate-limit.js';
import { buildWorkersApi } from '../../functions/api/src/workers/wiring.js';
import { FirestoreProxyStore } from '../../shared/src/adapters/firestore/proxy-store.js';
import { memoryLogger } from '../../shared/src/adapters/log/json-logger.js';
import { createPubSub } from '../../shared/src/adapters/pubsub/client.js';
import {
  GATEWAY_SNAPSHOTS_TOPIC,
  SNAPSHOT_REQUESTS_TOPIC,
} from '../../shared/src/messages/worker-snapshot-request.js';
import { systemClock } from '../../shared/src/ports/clock.js';
import { RecordingReconcilePublisher } from '../../shared/src/testing/recording-publisher.js';
import { firestoreHost, pubsubHost, releaseProject, testProjectId } from '../support/emulators.js';
import { proxy, writeFleet } from '../support/leases.js';

const ADMIN = 'fuzz-admin-token-0123456789abcdef';
const CRAWLER = 'fuzz-crawler-token-0123456789abc';
const WORKER = 'fuzz-worker-token-0123456789abcd';
const WORKER_ID = 'gw-1';
const AUDIENCE = 'https://proxyplane-api-123456.us-central1.run.app';
const ADMIN_EMAIL = 'ops@example.com';
const google = newSigningKey('k1');
const now = () => Math.floor(Date.now() / 1000);
const idToken = (email: string, issuedAt = now()) => signJwt(google, googleClaims(email, AUDIENCE, issuedAt));
const MiB = 1024 * 1024;
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
interface Schema {
  $ref?: string;
  type?: string | string[];
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  enum?: unknown[];
  pattern?: string;
  format?: string;
  anyOf?: Schema[];
  oneOf?: Schema[];
  additionalProperties?: boolean | Schema;
}
interface Operation {
  parameters?: Array<{ name: string; in: string; required?: boolean; schema: Schema }>;
  requestBody?: { content: Record<string, { schema: Schema }> };
  responses: Record<string, { description: string }>;
  security?: Array<Record<string, string[]>>;
}
interface Document {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Schema> };
}

interface Case {
  name: string;
  /** "METHOD /path" of the document's operation whose answers document the code, or null: a route it omits. */
  op: string | null;
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string | Buffer;
  chunked?: boolean;
  /** Exactly this status and code, when the case knows them; otherwise any 4xx the operation documents. */
  status?: number;
  /** Statuses besides `status` the case may get (a deep body can be over a route's small limit: 413). */
  or?: number[];
  error?: string;
  /** A documented success that changes nothing (releasing a lease no id names is 204: it is idempotent). */
  noContent?: boolean;
  /** An HTML answer (the fleet page's browser routes): status and no change are checked, not the envelope. */
  html?: boolean;
}

interface Answer {
  status: number;
  type: string;
  text: string;
}

function send(port: number, c: Case): Promise<Answer> {
  const body = c.body === undefined ? undefined : Buffer.from(c.body);
  const headers: Record<string, string> = { ...c.headers };
  if (body && !c.chunked) headers['content-length'] = String(body.length);
  return new Promise((resolve, reject) => {
    let answered = false;
    const req = request({ host: '127.0.0.1', port, method: c.method, path: c.path, headers }, (res) => {
      answered = true;
      const chunks: Buffer[] = [];
      res.on('data', (d: Buffer) => chunks.push(d));
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          type: String(res.headers['content-type'] ?? ''),
          text: Buffer.concat(chunks).toString('utf8'),
        }),
      );
    });
    // A server that answers 413 before reading a huge body closes the connection: not a failure.
    req.on('error', (err) => (answered ? undefined : reject(err)));
    req.setTimeout(10_000, () => req.destroy(new Error(`no answer within 10 s (a hang): ${c.name}`)));
    if (body && c.chunked) {
      for (let i = 0; i < body.length; i += 64 * 1024) req.write(body.subarray(i, i + 64 * 1024));
    } else if (body) {
      req.write(body);
    }
    req.end();
  });
}

// ---- the document ----------------------------------------------------------------------------------

const resolve = (doc: Document, s: Schema): Schema =>
  s.$ref ? resolve(doc, doc.components.schemas[s.$ref.split('/').pop() ?? ''] ?? {}) : s;

const typeOf = (s: Schema): string | undefined => (Array.isArray(s.type) ? undefined : s.type);
const nullable = (s: Schema) =>
  (Array.isArray(s.type) && s.type.includes('null')) ||
  [...(s.anyOf ?? []), ...(s.oneOf ?? [])].some((a) => a.type === 'null');

/** The codes an operation's answer of `status` names in its description, plus the service-wide ones. */
function documentedCodes(doc: Document, op: string | null, status: number): Set<string> {
  const codes = new Set<string>();
  if (status === 404) codes.add('not_found'); // no such route (docs/api.md § Errors)
  if (status === 405) codes.add('method_not_allowed');
  if (op === null) {
    // The routes the document omits answer in the same envelope with the codes of docs/api.md § Errors.
    for (const c of ['unauthenticated', 'forbidden', 'invalid_request', 'payload_too_large']) codes.add(c);
    return codes;
  }
  const [method = '', path = ''] = op.split(' ');
  const description = doc.paths[path]?.[method.toLowerCase()]?.responses[String(status)]?.description;
  // A code is a snake_case word of the description, or one of the one-word codes (docs/api.md § Errors).
  const single = new Set([
    'unauthenticated',
    'forbidden',
    'conflict',
    'contended',
    'unavailable',
    'internal',
  ]);
  for (const word of description?.match(/[a-z][a-z_]*[a-z]/g) ?? []) {
    if (word.includes('_') || single.has(word)) codes.add(word);
  }
  return codes;
}

/** A value of another JSON type than the schema's, or undefined where the schema takes several. */
function wrongType(s: Schema): Json | undefined {
  switch (typeOf(s)) {
    case 'string':
      return 12345;
    case 'integer':
    case 'number':
      return '1';
    case 'boolean':
      return 'true';
    case 'object':
      return 'x';
    case 'array':
      return { '0': 'x' };
    default:
      return undefined;
  }
}

const clone = <T>(v: T): T => structuredClone(v);
function setAt(root: Json, path: Array<string | number>, value: Json | undefined): Json {
  const out = clone(root);
  let at = out as Record<string | number, Json>;
  for (const k of path.slice(0, -1)) at = at[k] as Record<string | number, Json>;
  const last = path[path.length - 1] as string | number;
  if (value === undefined) delete at[last];
  else at[last] = value;
  return out;
}

/**
 * Per field of the schema (nested objects and the first element of arrays, as present in `base`): a
 * wrong type, null, the field left out when required, and for strings NUL bytes, a lone surrogate and a
 * long value; for numbers the out-of-range and non-integer ones. Each is one body: `base` with that change.
 */
function fieldMutations(
  doc: Document,
  schema: Schema,
  base: Json,
  path: Array<string | number> = [],
): Array<[string, string]> {
  const s = resolve(doc, schema);
  const out: Array<[string, string]> = [];
  const at = path.length === 0 ? '(root)' : path.join('.');
  const put = (label: string, v: Json | undefined) =>
    out.push([`${at}: ${label}`, JSON.stringify(setAt(base, path, v))]);
  const raw = (label: string, literal: string) => {
    const marker = '"__RAW_MARKER__"';
    out.push([
      `${at}: ${label}`,
      JSON.stringify(setAt(base, path, '__RAW_MARKER__')).replace(marker, literal),
    ]);
  };
  if (path.length > 0) {
    const wrong = wrongType(s);
    if (wrong !== undefined) put(`wrong type (${JSON.stringify(wrong)})`, wrong);
    if (!nullable(s)) put('null', null);
    const t = typeOf(s);
    if (t === 'string' && (s.pattern || s.enum || s.format)) {
      put('NUL byte', 'a\u0000b');
    }
    if (t === 'string') {
      raw('lone surrogate', '"x\\ud800"');
      if (s.pattern || s.enum || s.format) put('5,000 characters', 'x'.repeat(5000));
    }
    if (t === 'integer' || t === 'number') {
      put('-1', -1);
      raw('1e400 (Infinity)', '1e400');
      if (t === 'integer') put('1.5', 1.5);
    }
    if (t === 'boolean') put('0', 0);
  }
  const value = path.reduce<Json | undefined>(
    (v, k) => (v as Record<string | number, Json> | undefined)?.[k],
    base,
  );
  if (typeOf(s) === 'object' && s.properties && value && typeof value === 'object' && !Array.isArray(value)) {
    for (const [k, sub] of Object.entries(s.properties)) {
      if (k in value) out.push(...fieldMutations(doc, sub, base, [...path, k]));
      else {
        // A field the base body leaves out: its wrong type alone.
        const wrong = wrongType(resolve(doc, sub));
        if (wrong !== undefined) put(`${k} of the wrong type`, { ...value, [k]: wrong });
      }
    }
    for (const k of s.required ?? []) {
      if (k in value)
        put(`required ${k} left out`, Object.fromEntries(Object.entries(value).filter(([x]) => x !== k)));
    }
    if (s.additionalProperties === false) put('an unknown field', { ...value, zzUnknownField: 1 });
  }
  if (typeOf(s) === 'array' && s.items && Array.isArray(value) && value.length > 0) {
    out.push(...fieldMutations(doc, s.items, base, [...path, 0]));
  }
  return out;
}

// ---- the cases -------------------------------------------------------------------------------------

const nest = (depth: number) => `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
const nestArrays = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;
const invalidUtf8 = Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0xc3, 0x22, 0x7d]); // {"a":"…"}

/** Path parameter values that are not ids of anything (percent-encoded as they go on the wire). */
const badIds: Array<[string, string]> = [
  ['..', '..'],
  ['%2F', '%2F'],
  ['..%2F..%2Fx', '..%2F..%2Fx'],
  ['%2E%2E', '%2E%2E'],
  ['300 characters', 'a'.repeat(300)],
  ['a NUL byte', 'a%00b'],
  ['a lone surrogate (CESU bytes)', 'a%ED%A0%80'],
  ['invalid UTF-8', 'a%FF%FE'],
  ['a malformed escape', '%ZZ'],
  ['upper case', 'SEEDED'],
  ['a newline', 'a%0Ab'],
];

/**
 * Where a method the document does not list on a path is another route's: the jobs' custom methods are
 * one POST route beside `GET /v1/jobs/{name}` (docs/api.md § The OpenAPI document).
 */
const methodAnswers: Record<string, Partial<Case>> = {
  // `gc-sweep:run` read as a job name: none is called that.
  ...Object.fromEntries(
    ['run', 'pause', 'resume'].map((a) => [
      `GET /v1/jobs/{name}:${a}`,
      { op: 'GET /v1/jobs/{name}', body: undefined, status: 404, error: 'unknown_job' },
    ]),
  ),
  // A call of no action: no route (job-routes.ts), with or without a body.
  'POST /v1/jobs/{name}': { status: 404, error: 'not_found' },
};

interface Fixture {
  /** The valid value of each path parameter name, per operation path. */
  param(path: string, name: string): string;
  /** A body the operation would act on, and its media type. */
  body(op: string): { json: Json; type: string } | undefined;
  /** The credential the operation takes. */
  credential(op: Operation): Record<string, string>;
}

const fill = (path: string, f: Fixture, swap?: [string, string]) =>
  path.replace(/\{(\w+)\}/g, (_m, name: string) =>
    swap && swap[0] === name ? swap[1] : encodeURIComponent(f.param(path, name)),
  );

function generateCases(doc: Document, f: Fixture): Case[] {
  const cases: Case[] = [];
  const all = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];
  for (const [path, ops] of Object.entries(doc.paths)) {
    // Methods the path does not take (jobs' :run/:pause/:resume are one route: its methods are the union).
    const methods = Object.keys(ops).map((m) => m.toUpperCase());
    const anyOp = Object.values(ops)[0] as Operation;
    for (const method of all.filter((m) => !methods.includes(m))) {
      const answer = methodAnswers[`${method} ${path}`];
      cases.push({
        name: `${method} ${path}: a method it does not take`,
        op: null,
        method,
        path: fill(path, f),
        headers: { ...f.credential(anyOp), 'content-type': 'application/json' },
        body: method === 'GET' || method === 'DELETE' ? undefined : '{}',
        ...answer,
        status: answer?.status ?? 405,
        error: answer?.error ?? 'method_not_allowed',
      });
    }
    for (const [m, op] of Object.entries(ops)) {
      const method = m.toUpperCase();
      const key = `${method} ${path}`;
      const good = f.body(key);
      const cred = f.credential(op);
      const bodyFor = good
        ? { body: JSON.stringify(good.json), headers: { ...cred, 'content-type': good.type } }
        : { body: undefined, headers: cred };
      const base = (name: string, extra: Partial<Case>): Case => ({
        name: `${key}: ${name}`,
        op: key,
        method,
        path: withQuery(),
        ...bodyFor,
        ...extra,
      });
      const queryParams = (op.parameters ?? []).filter((p) => p.in === 'query');
      const requiredQuery = queryParams
        .filter((p) => p.required)
        .map((p) => `${p.name}=${encodeURIComponent(f.param(path, p.name))}`)
        .join('&');
      /** The path with its required query parameters (the snapshot's sessionId), plus `q`. */
      const withQuery = (q = '') => {
        const all = [requiredQuery, q].filter((x) => x !== '').join('&');
        return `${fill(path, f)}${all ? `?${all}` : ''}`;
      };

      // Credentials: none, garbage, expired, of a non-admin, of the wrong kind.
      const security = op.security ?? [{ admin: [] }];
      const schemes = new Set(security.flatMap((s) => Object.keys(s)));
      if (schemes.size > 0) {
        const path0 = withQuery();
        const refusals: Array<[string, Record<string, string>, number, string]> = [
          ['no credential', {}, 401, 'unauthenticated'],
          ['an unknown bearer token', bearer('not-a-known-token-0123456789abcdef'), 401, 'unauthenticated'],
          [
            'Basic credentials',
            { authorization: `Basic ${Buffer.from(`a:${ADMIN}`).toString('base64')}` },
            401,
            'unauthenticated',
          ],
          ['an empty bearer token', { authorization: 'Bearer ' }, 401, 'unauthenticated'],
          [
            'an expired admin identity token',
            bearer(idToken(ADMIN_EMAIL, now() - 7200)),
            401,
            'unauthenticated',
          ],
        ];
        if (schemes.has('admin') && !schemes.has('crawler')) {
          refusals.push(['a crawler token', bearer(CRAWLER), 403, 'forbidden']);
          refusals.push(['a worker token', bearer(WORKER), 401, 'unauthenticated']);
          refusals.push([
            'an identity token of no admin',
            bearer(idToken('stranger@example.com')),
            403,
            'forbidden',
          ]);
        }
        if (schemes.has('crawler')) {
          refusals.push(['a worker token', bearer(WORKER), 401, 'unauthenticated']);
          refusals.push([
            'an identity token of no admin',
            bearer(idToken('stranger@example.com')),
            403,
            'forbidden',
          ]);
        }
        if (schemes.has('worker')) {
          refusals.push(['an admin token', bearer(ADMIN), 401, 'unauthenticated']);
          refusals.push(['a crawler token', bearer(CRAWLER), 401, 'unauthenticated']);
        }
        if (schemes.has('fleetCookie')) {
          refusals.push([
            'a fleet cookie that is no token',
            { cookie: 'proxyplane_fleet=garbage' },
            401,
            'unauthenticated',
          ]);
          refusals.push([
            'a fleet cookie with a crawler token',
            { cookie: `proxyplane_fleet=${CRAWLER}` },
            403,
            'forbidden',
          ]);
        }
        for (const [label, headers, status, error] of refusals) {
          const { authorization: _drop, ...rest } = bodyFor.headers as Record<string, string>;
          cases.push(base(`${label}`, { path: path0, headers: { ...rest, ...headers }, status, error }));
        }
      }
      if (schemes.has('worker')) {
        // A worker's own credential acting for another worker id.
        const other = path.includes('{id}') ? path.replace('{id}', 'gw-2') : undefined;
        if (other)
          cases.push(
            base('the credential of another worker', {
              path: fill(other, f),
              status: 403,
              error: 'forbidden',
            }),
          );
      }
      const cred0 = bodyFor.headers;

      // Path parameters that are not ids.
      for (const p of (op.parameters ?? []).filter((x) => x.in === 'path')) {
        // Releasing is idempotent: an id that names no lease is released already (204, nothing written).
        const idempotent = key === 'DELETE /v1/leases/{id}';
        for (const [label, value] of badIds) {
          const q = requiredQuery ? `?${requiredQuery}` : '';
          const at = `${fill(path, f, [p.name, value])}${q}`;
          // Dot segments (%2E%2E too) are resolved before routing: no lease route at all.
          const dots = ['..', '.', '%2E%2E'].includes(value);
          cases.push(base(`{${p.name}} ${label}`, { path: at, noContent: idempotent && !dots }));
        }
        // Empty: the segment gone (another route, or none).
        const empty = fill(path, f, [p.name, '']);
        cases.push(base(`{${p.name}} empty`, { path: empty }));
      }

      // Header parameters (If-Match, Idempotency-Key): malformed lists and tags, and well-formed ones that
      // match nothing — the seeded proxy is at generation 1 and no routing is stored (revision 0), so
      // neither "1" nor "0" nor `*` is sent: any answer but 400 or 412 precondition_failed would be a write.
      // A value the parameter's own schema pattern accepts is no hostile input to it (`garbage` is a
      // well-formed Idempotency-Key), so it is not sent there.
      for (const h of (op.parameters ?? []).filter((x) => x.in === 'header')) {
        const pattern = h.schema?.pattern;
        const wellFormed = pattern === undefined ? null : new RegExp(pattern);
        const tags = ['garbage', '"', '"2', '2', 'W/"1"', 'W/"0"', '"-1"', '"1.0"', '"01"', '"00"'];
        tags.push(
          '"99999999999999999999999"',
          ',,,',
          '"2" , "3"',
          `"${'9'.repeat(2000)}"`,
          'k'.repeat(129),
          '"\u00ff"',
          '* , "2"',
        );
        for (const tag of tags.filter((t) => !wellFormed?.test(t))) {
          cases.push(
            base(`${h.name}: ${tag.slice(0, 30)}`, {
              headers: { ...bodyFor.headers, [h.name.toLowerCase()]: tag },
              status: 400,
              or: [412],
            }),
          );
        }
      }

      // Query parameters.
      // A route that reads no query refuses one it does not read, unless its only 400 is a body's (the
      // fleet JSON routes: their auth takes the page's `?token=`).
      const readsQuery = queryParams.length > 0;
      const refusesOnlyBody = op.responses['400']?.description === refusesBody()[400].description;
      if (!readsQuery && op.responses['400'] && !refusesOnlyBody) {
        for (const q of ['unknown=1', '__proto__=1', 'x=%00', `${'k'.repeat(3000)}=1`]) {
          cases.push(
            base(`an unread query parameter ${q.slice(0, 20)}`, {
              path: withQuery(q),
              status: 400,
              error: 'invalid_request',
            }),
          );
        }
      }
      for (const p of queryParams) {
        const s = resolve(doc, p.schema);
        const values: string[] = ['%00', 'a%ED%A0%80', 'x'.repeat(3000)];
        if (s.enum) values.push('bogus', '', 'TRUE');
        if (typeOf(s) === 'integer')
          values.push('-1', '0', 'NaN', '1e309', '99999999999999999999', '1.5', '', '0x10', ' 1');
        if (s.pattern) values.push('!!', '..', 'a b');
        if (p.name === 'pageToken') {
          // Tokens the list never hands out (each names a document id): garbage, ids Firestore refuses, and NULs
          // (an id Firestore holds, but the token reader refuses: document-id.ts).
          const token = (id: string) => Buffer.from(id).toString('base64url');
          values.push('AAAA', 'zzzzzzzz', token('\u0000\u0001'), token('..'), token('.'));
          values.push(token('__x__'), token('a'.repeat(1536)), token('a/b'), token('gw-1\u0000'));
        }
        // On the gateway's worker listing, pageSize and pageToken page all=true only: their values are
        // judged beside it, and alone they are refused whatever they are. GET /v1/proxies pages without one.
        const paging =
          (p.name === 'pageSize' || p.name === 'pageToken') && queryParams.some((o) => o.name === 'all');
        if (paging) {
          cases.push(
            base(`?${p.name} without all=true`, {
              path: `${fill(path, f)}?${p.name}=1`,
              status: 400,
              error: 'invalid_request',
            }),
          );
        }
        for (const pre of paging ? ['all=true&'] : ['']) {
          for (const v of values) {
            const q = `${pre}${p.name}=${v.startsWith('%') || v.includes('%') ? v : encodeURIComponent(v)}`;
            const others = queryParams.filter((o) => o.required && o.name !== p.name);
            const rest = others
              .map((o) => `&${o.name}=${encodeURIComponent(f.param(path, o.name))}`)
              .join('');
            cases.push(
              base(`?${q.slice(0, 40)}`, {
                path: `${fill(path, f)}?${q}${rest}`,
                status: 400,
                error: 'invalid_request',
              }),
            );
          }
        }
        if (p.required) {
          const rest = queryParams.filter((o) => o.required && o.name !== p.name);
          const q = rest.map((o) => `${o.name}=${encodeURIComponent(f.param(path, o.name))}`).join('&');
          cases.push(
            base(`required ${p.name} left out`, {
              path: `${fill(path, f)}${q ? `?${q}` : ''}`,
              status: 400,
              error: 'invalid_request',
            }),
          );
        }
      }

      // Bodies.
      if (good) {
        const type = good.type;
        const b = (name: string, body: string | Buffer, extra: Partial<Case> = {}) =>
          cases.push(
            base(name, { body, headers: { ...cred0, 'content-type': type }, path: withQuery(), ...extra }),
          );
        b('empty body', '', { status: 400, error: 'invalid_json' });
        b('truncated JSON', '{"a":', { status: 400, error: 'invalid_json' });
        b('single quotes', "{'a':1}", { status: 400, error: 'invalid_json' });
        b('a raw NUL byte in the JSON', '{"a":"\u0000"}', { status: 400, error: 'invalid_json' });
        b('two documents', '{}{}', { status: 400, error: 'invalid_json' });
        b('invalid UTF-8', invalidUtf8);
        for (const [label, root] of [
          ['an array', '[]'],
          ['a string', '"x"'],
          ['null', 'null'],
          ['a number', '42'],
          ['true', 'true'],
        ]) {
          b(`${label} at the root`, root as string, { status: 400 });
        }
        const deep = { status: 400, or: [413], error: 'invalid_request' };
        b('1,000-deep objects at the root', nest(1000), deep);
        b('1,000-deep arrays at the root', nestArrays(1000), deep);
        const first = Object.keys(good.json as object)[0];
        if (first) {
          b(
            '1,000-deep objects in a field',
            JSON.stringify({ ...(good.json as object), [first]: '__N__' }).replace('"__N__"', nest(1000)),
            deep,
          );
          // The good body with its first key written twice: JSON.parse alone would read the good body.
          const again = `${JSON.stringify(first)}:${JSON.stringify((good.json as Record<string, unknown>)[first])}`;
          b('a key repeated at the root', JSON.stringify(good.json).replace(/^\{/, `{${again},`), {
            status: 400,
            error: 'invalid_request',
          });
        }
        b(
          '__proto__ at the root',
          JSON.stringify(good.json).replace(/^\{/, '{"__proto__":{"polluted":true},'),
          { status: 400, error: 'invalid_request' },
        );
        b('2 MiB (Content-Length)', JSON.stringify({ ...(good.json as object), zz: 'x'.repeat(2 * MiB) }), {
          status: 413,
          error: 'payload_too_large',
        });
        b('2 MiB (chunked)', JSON.stringify({ ...(good.json as object), zz: 'x'.repeat(2 * MiB) }), {
          status: 413,
          error: 'payload_too_large',
          chunked: true,
        });
        const ok = JSON.stringify(good.json);
        for (const [label, t] of [
          ['no Content-Type', null],
          ['text/plain', 'text/plain'],
          ['form-urlencoded', 'application/x-www-form-urlencoded'],
          ['application/jsonx', 'application/jsonx'],
          ['JSON in Latin-1', 'application/json; charset=iso-8859-1'],
          ['an empty Content-Type', ''],
        ] as Array<[string, string | null]>) {
          const { 'content-type': _t, ...h } = { ...cred0, 'content-type': type };
          cases.push(
            base(`the good body as ${label}`, {
              body: ok,
              headers: t === null ? h : { ...h, 'content-type': t },
              path: withQuery(),
              status: 415,
              error: 'unsupported_media_type',
            }),
          );
        }
        const schema = op.requestBody?.content[type]?.schema ?? {};
        for (const [label, body] of fieldMutations(doc, schema, good.json))
          b(label, body, { status: 400, or: [413] });
      } else if (method === 'GET' && op.responses['413']) {
        // Even a route that reads no body bounds what it is sent (the service-wide limit).
        cases.push(
          base('a 2 MiB body on a GET', {
            body: 'x'.repeat(2 * MiB),
            headers: { ...cred0, 'content-type': 'application/json' },
            path: withQuery(),
            status: 413,
            error: 'payload_too_large',
          }),
        );
      } else if (method !== 'GET') {
        // A route that takes no body refuses one.
        cases.push(
          base('a JSON body where none is taken', {
            body: '{}',
            headers: { ...cred0, 'content-type': 'application/json' },
            path: withQuery(),
          }),
        );
        cases.push(
          base('a 2 MiB body where none is taken', {
            body: 'x'.repeat(2 * MiB),
            headers: { ...cred0, 'content-type': 'application/json' },
            path: withQuery(),
            status: 413,
            error: 'payload_too_large',
          }),
        );
      }
    }
  }
  return cases;
}

/** The routes /openapi.json leaves out (docs/api.md § The OpenAPI document), with what each must answer. */
function omittedRouteCases(): Case[] {
  const admin = bearer(ADMIN);
  const c = (name: string, method: string, path: string, extra: Partial<Case> = {}): Case => ({
    name: `${method} ${path.slice(0, 60)}: ${name}`,
    op: null,
    method,
    path,
    headers: admin,
    ...extra,
  });
  const html = { accept: 'text/html' };
  const form = 'application/x-www-form-urlencoded';
  return [
    c('no credential', 'GET', '/openapi.json', { headers: {}, status: 401, error: 'unauthenticated' }),
    c('a worker token', 'GET', '/openapi.json', {
      headers: bearer(WORKER),
      status: 401,
      error: 'unauthenticated',
    }),
    c('a method it does not take', 'POST', '/openapi.json', {
      body: '{}',
      headers: { ...admin, 'content-type': 'application/json' },
      status: 405,
      error: 'method_not_allowed',
    }),
    c('no credential', 'GET', '/metrics', { headers: {}, status: 401, error: 'unauthenticated' }),
    c('an expired identity token', 'GET', '/metrics', {
      headers: bearer(idToken(ADMIN_EMAIL, now() - 7200)),
      status: 401,
      error: 'unauthenticated',
    }),
    c('a method it does not take', 'DELETE', '/metrics', { status: 405, error: 'method_not_allowed' }),
    c('no credential', 'GET', '/fleet', { headers: {}, status: 401, error: 'unauthenticated' }),
    c('no credential (a browser)', 'GET', '/fleet', { headers: html, status: 401, html: true }),
    c('a crawler token', 'GET', '/fleet', { headers: bearer(CRAWLER), status: 403, error: 'forbidden' }),
    // The link `npm start` prints, opened in a browser: the login form; to a script, the error body.
    c('a garbage token in the address (a browser)', 'GET', '/fleet?token=%00garbage', {
      headers: html,
      status: 401,
      html: true,
    }),
    c('a garbage token in the address', 'GET', '/fleet?token=%00garbage', {
      headers: {},
      status: 401,
      error: 'unauthenticated',
    }),
    c('a garbage cookie', 'GET', '/fleet/events', {
      headers: { cookie: 'proxyplane_fleet=%ED%A0%80' },
      status: 401,
      error: 'unauthenticated',
    }),
    c('no credential', 'GET', '/fleet/events', { headers: {}, status: 401, error: 'unauthenticated' }),
    c('no credential', 'GET', '/fleet/proxies/seeded', {
      headers: {},
      status: 401,
      error: 'unauthenticated',
    }),
    ...badIds.map(([label, v]) =>
      c(`{name} ${label}`, 'GET', `/fleet/proxies/${v}`, { headers: { ...admin, ...html }, html: true }),
    ),
    c('a method it does not take', 'DELETE', '/fleet', { status: 405, error: 'method_not_allowed' }),
    c('a method it does not take', 'PUT', '/fleet/login', {
      body: 'token=x',
      headers: { ...admin, 'content-type': form },
      status: 405,
      error: 'method_not_allowed',
    }),
    c('a method it does not take, no credential', 'PUT', '/fleet/login', {
      body: 'token=x',
      headers: { 'content-type': form },
      status: 401,
      error: 'unauthenticated',
    }),
    c('an asset that is not there', 'GET', '/fleet/assets/..%2F..%2Fpackage.json', {
      status: 404,
      error: 'not_found',
    }),
    c('a token that is no credential', 'POST', '/fleet/login', {
      headers: { 'content-type': form },
      body: 'token=garbage-garbage-garbage',
      status: 401,
      html: true,
    }),
    c('a token with a NUL byte', 'POST', '/fleet/login', {
      headers: { 'content-type': form },
      body: 'token=a%00b',
      status: 401,
      html: true,
    }),
    c('a token with a lone surrogate', 'POST', '/fleet/login', {
      headers: { 'content-type': form },
      body: 'token=a%ED%A0%80',
      status: 401,
      html: true,
    }),
    c('no token', 'POST', '/fleet/login', {
      headers: { 'content-type': form },
      body: '',
      status: 401,
      html: true,
    }),
    c('a JSON body', 'POST', '/fleet/login', {
      headers: { 'content-type': 'application/json' },
      body: `{"token":"${ADMIN}"}`,
      html: true,
    }),
    c('a 2 MiB form', 'POST', '/fleet/login', {
      headers: { 'content-type': form },
      body: `token=${'x'.repeat(2 * MiB)}`,
      status: 413,
      error: 'payload_too_large',
    }),
    c('a 2 MiB form (chunked)', 'POST', '/fleet/login', {
      headers: { 'content-type': form },
      body: `token=${'x'.repeat(2 * MiB)}`,
      chunked: true,
      status: 413,
      error: 'payload_too_large',
    }),
    c('no such route', 'GET', '/v1/nothing-here', { status: 404, error: 'not_found' }),
    c('no such route under a proxy', 'GET', '/v1/proxies/seeded/unknown', {
      status: 404,
      error: 'not_found',
    }),
    // Dot segments are resolved before routing (RFC 3986 §5.2.4): this is DELETE /v1/proxies/seeded, an
    // admin route, and a crawler token is refused there.
    c('dot segments climbing out of the lease routes', 'DELETE', '/v1/leases/x/../../proxies/seeded', {
      headers: bearer(CRAWLER),
      status: 403,
      error: 'forbidden',
    }),
  ];
}

// ---- the test ----------------------------------------------------------------------------------------

describe('hostile input to every route of /openapi.json', () => {
  const projectId = testProjectId('demo-apifuzz');
  const db = new Firestore({ projectId });
  const pubsub = createPubSub(projectId, `${pubsubHost().host}:${pubsubHost().port}`);
  const publisher = new RecordingReconcilePublisher();
  const log = memoryLogger();
  const pubsubCalls: string[] = [];
  const messages: string[] = [];
  const observers: Subscription[] = [];
  const scheduler = new InMemoryJobScheduler(['gc-sweep'], () => new Date('2026-03-01T00:00:00Z'));
  let certs: CertsServer;
  let leases: LeaseApiRuntime;
  let api: ApiServer;
  let doc: Document;
  let leaseId = '';
  let sessionId = '';

  /** Every call the object's methods take, named in `calls` (the workers' Pub/Sub adapters). */
  const recorded = <T extends object>(what: string, target: T): T =>
    new Proxy(target, {
      get(t, prop, receiver) {
        const v = Reflect.get(t, prop, receiver);
        if (typeof v !== 'function') return v;
        return (...args: unknown[]) => {
          pubsubCalls.push(`${what}.${String(prop)}`);
          return (v as (...a: unknown[]) => unknown).apply(t, args);
        };
      },
    });

  beforeAll(async () => {
    certs = await startCertsServer([google]);
    await Promise.all([SNAPSHOT_REQUESTS_TOPIC, GATEWAY_SNAPSHOTS_TOPIC].map((t) => pubsub.createTopic(t)));
    await writeFleet(db, [proxy('seeded', { capacity: 5, external: true }), proxy('other', { capacity: 2 })]);
    const auth = buildAuthenticator(
      {
        mode: 'enforced',
        tokens: [{ name: 'admin', token: ADMIN }],
        google: { emails: [ADMIN_EMAIL], domains: [], audiences: [AUDIENCE] },
        warnings: [],
      },
      { certsUrl: certs.url },
    );
    leases = buildLeaseApi({
      firestore: db,
      secrets: { access: async () => 'u:p' },
      clock: systemClock,
      monotonicNow: () => performance.now(),
      registry: new Registry(),
      log,
      config: { tokens: [{ name: 'c1', token: CRAWLER }], cooldownWindowMs: 60_000, credentialsCacheMs: 0 },
    });
    const workers = buildWorkersApi({
      firestore: db,
      pubsub,
      projectId,
      config: loadWorkersApiConfig({ WORKER_TOKENS: `${WORKER_ID}:${WORKER}` }),
      adminAuth: auth,
      clock: systemClock,
      log,
    });
    api = await startApiServer({
      deps: {
        version: 'fuzz',
        store: new FirestoreProxyStore(db),
        publisher,
        clock: systemClock,
        auth,
        log,
        echo: { trustedHops: 0 },
        leases,
        workers: {
          ...workers,
          subscriptions: recorded('subscriptions', workers.subscriptions),
          requester: recorded('requester', workers.requester),
          // Hostile cases come by the hundred per worker: the rate limit (its own tests) would answer them.
          limiter: { take: () => ({ ok: true }) } as unknown as RateLimiter,
        },
        fleet: new InMemoryFleetFeed(),
        jobs: { scheduler, runs: new InMemoryJobRuns() },
      },
    });
    const get = (path: string, headers: Record<string, string>, body?: unknown) =>
      fetch(`${api.url}${path}`, {
        method: body === undefined ? 'GET' : 'POST',
        headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    doc = (await (await get('/openapi.json', bearer(ADMIN))).json()) as Document;
    // A live lease and a registered worker session: the ids the routes' good requests name.
    const lease = await get('/v1/leases', bearer(CRAWLER), { ttlSeconds: 600 });
    expect(lease.status).toBe(201);
    leaseId = ((await lease.json()) as { leaseId: string }).leaseId;
    const registered = await get('/v1/workers/register', bearer(WORKER), {
      workerId: WORKER_ID,
      instanceId: 'i-1',
      zone: 'us-central1-a',
      supportedProtocolVersion: 1,
    });
    expect(registered.status, await registered.clone().text()).toBe(200);
    sessionId = ((await registered.json()) as { sessionId: string }).sessionId;
    pubsubCalls.length = 0; // the registration's own subscription and snapshot request
    // From here on, any message on the workers' topics is one a refused request sent.
    for (const t of [SNAPSHOT_REQUESTS_TOPIC, GATEWAY_SNAPSHOTS_TOPIC]) {
      const [sub] = await pubsub.topic(t).createSubscription(`${t}--fuzz-observer`);
      sub.on('message', (m: Message) => {
        m.ack();
        messages.push(`${t}: ${m.data.toString().slice(0, 200)}`);
      });
      observers.push(sub);
    }
  }, 60_000);

  afterAll(async () => {
    await api?.close();
    await Promise.all(observers.map((s) => s.close()));
    await leases?.stop();
    await certs?.close();
    await pubsub.close();
    await db.terminate();
    await releaseProject(projectId);
  });

  const fixture: Fixture = {
    param: (path, name) => {
      if (path.startsWith('/v1/leases')) return leaseId;
      if (path.startsWith('/v1/workers')) return name === 'sessionId' ? sessionId : WORKER_ID;
      if (path.startsWith('/v1/jobs')) return 'gc-sweep';
      return 'seeded';
    },
    credential: (op) => {
      const schemes = new Set((op.security ?? [{ admin: [] }]).flatMap((s) => Object.keys(s)));
      return schemes.has('worker') ? bearer(WORKER) : bearer(ADMIN);
    },
    body: (op) => {
      const external = { mode: 'external', endpoint: { host: '127.0.0.9', port: 3128, protocol: 'http' } };
      const json = (j: Json, type = 'application/json') => ({ json: j, type });
      const bodies: Record<string, { json: Json; type: string }> = {
        'POST /v1/proxies': json({
          name: 'fresh',
          spec: { ...external, capacity: 3, attributes: { region: 'eu' } },
        }),
        'PUT /v1/proxies/{name}/spec': json({ ...external, capacity: 9 }),
        'PATCH /v1/proxies/{name}/spec': json(
          { capacity: 9, attributes: { k: 'v' } },
          'application/merge-patch+json',
        ),
        'POST /v1/leases': json({
          ttlSeconds: 60,
          target: 'example.com',
          selector: { region: 'eu' },
          exclusive: false,
          protocols: ['http'],
        }),
        'POST /v1/leases/{id}/renew': json({ ttlSeconds: 60 }),
        'POST /v1/leases/{id}/report': json({ result: 'ok', target: 'example.com' }),
        'POST /v1/workers/register': json({
          workerId: WORKER_ID,
          instanceId: 'i-2',
          zone: 'us-central1-a',
          supportedProtocolVersion: 1,
        }),
        'POST /v1/workers/{id}/ack': json({ sessionId, version: 1, epoch: 0, checksum: '0'.repeat(64) }),
        'POST /v1/workers/{id}/runtime': json({
          sessionId,
          reportSequence: 1,
          snapshotVersion: 0,
          epoch: 0,
          draining: false,
          observedAt: '2026-03-01T00:00:00Z',
          counts: [{ proxy: 'seeded', active: 0, reserved: 0 }],
        }),
        'POST /v1/workers/{id}/outcomes': json({
          sessionId,
          sequence: 1,
          outcomes: [
            {
              proxy: 'seeded',
              stage: 'CONNECT',
              ok: true,
              latencyMs: 1,
              target: 'example.com:443',
              status: 200,
              at: '2026-03-01T00:00:00Z',
            },
          ],
        }),
        'PUT /v1/gateway/routing': json({
          routes: [
            {
              name: 'r',
              match: { hosts: ['example.com'] },
              selector: { region: 'eu' },
              policy: 'sticky',
              stickyKey: { header: 'x-k' },
              targetCheck: { url: 'http://example.com/', expectedStatus: 200 },
            },
          ],
        }),
        'POST /v1/gateway/reclaims/{proxy}': json({ ttlSeconds: 600 }),
      };
      return bodies[op];
    },
  };

  // Every document as stored, at any depth, with its update time (moved by any write): one kindless
  // all-descendants query on the emulator's REST endpoint (the client library has no such query).
  const everyDocument = async (): Promise<string[]> => {
    const { host, port } = firestoreHost();
    const res = await fetch(
      `http://${host}:${port}/v1/projects/${projectId}/databases/(default)/documents:runQuery`,
      {
        method: 'POST',
        headers: { authorization: 'Bearer owner', 'content-type': 'application/json' },
        body: JSON.stringify({
          structuredQuery: {
            from: [{ allDescendants: true }],
            select: { fields: [{ fieldPath: '__name__' }] },
          },
        }),
      },
    );
    if (!res.ok) throw new Error(`listing the documents: ${res.status} ${await res.text()}`);
    const rows = (await res.json()) as Array<{ document?: { name: string; updateTime: string } }>;
    return rows.flatMap((r) =>
      r.document ? [`${r.document.name.split('/documents/')[1]}@${r.document.updateTime}`] : [],
    );
  };
  const state = async () => ({
    docs: (await everyDocument()).sort(),
    published: publisher.published.length,
    pubsub: pubsubCalls.length,
    messages: messages.length,
    jobs: JSON.stringify([...scheduler.jobs.values()]) + JSON.stringify(scheduler.runs),
  });
  type State = Awaited<ReturnType<typeof state>>;

  let cases: Case[] = [];
  it('generates cases for every operation of the served document', () => {
    cases = [...generateCases(doc, fixture), ...omittedRouteCases()];
    const covered = new Set(cases.map((c) => c.op));
    const operations = Object.entries(doc.paths).flatMap(([p, ops]) =>
      Object.keys(ops).map((m) => `${m.toUpperCase()} ${p}`),
    );
    expect(operations.length).toBeGreaterThanOrEqual(29);
    for (const op of operations) expect(covered, op).toContain(op);
    expect(cases.length).toBeGreaterThan(800);
  });

  it('answers each with a documented 4xx and changes nothing', async () => {
    const failures: string[] = [];
    let before: State | undefined;
    const started = Date.now();
    for (const c of cases) {
      before ??= await state();
      let res: Answer;
      try {
        res = await send(api.port, c);
      } catch (err) {
        failures.push(`${c.name}: ${(err as Error).message}`);
        before = undefined;
        continue;
      }
      const problems: string[] = [];
      const allowed = c.status === undefined ? undefined : [c.status, ...(c.or ?? [])];
      if (c.noContent) {
        if (res.status !== 204 || res.text !== '') problems.push(`status ${res.status}, expected 204`);
      } else if (res.status < 400 || res.status > 499) problems.push(`status ${res.status}`);
      if (allowed && !allowed.includes(res.status))
        problems.push(`status ${res.status}, expected ${allowed}`);
      const envelope = !c.html && !c.noContent;
      if (envelope) {
        let body: { error?: unknown; message?: unknown } = {};
        try {
          body = JSON.parse(res.text);
        } catch {
          problems.push(`not JSON (${res.type})`);
        }
        if (!res.type.startsWith('application/json')) problems.push(`Content-Type ${res.type}`);
        if (typeof body.error !== 'string' || !/^[a-z][a-z_]*$/.test(body.error))
          problems.push('no error code');
        if (typeof body.message !== 'string') problems.push('no message');
        if (c.error !== undefined && res.status === c.status && body.error !== c.error)
          problems.push(`error ${String(body.error)}, expected ${c.error}`);
        if (typeof body.error === 'string' && !documentedCodes(doc, c.op, res.status).has(body.error)) {
          problems.push(`code ${body.error} is not documented for ${c.op ?? 'the route'} ${res.status}`);
        }
      } else if (c.html && !res.type.startsWith('text/html') && !res.type.startsWith('application/json')) {
        problems.push(`Content-Type ${res.type}`);
      }
      if (res.text.length > 16 * 1024) problems.push(`a ${res.text.length}-character answer`);
      const after = await state();
      if (JSON.stringify(after) !== JSON.stringify(before)) {
        problems.push(`changed state: ${JSON.stringify(diff(before, after)).slice(0, 400)}`);
      }
      before = after;
      if (problems.length > 0)
        failures.push(`${c.name} → ${problems.join('; ')} :: ${res.text.slice(0, 200)}`);
    }
    const seconds = (Date.now() - started) / 1000;
    expect(failures, `${failures.length} of ${cases.length} cases (${seconds}s)`).toEqual([]);
  }, 240_000);

  it('logged no 5xx, left no prototype polluted, created no Pub/Sub topic or subscription, and still serves', async () => {
    expect(log.lines.filter((l) => l.severity === 'ERROR')).toEqual([]);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(pubsubCalls).toEqual([]);
    await new Promise((r) => setTimeout(r, 500));
    expect(messages).toEqual([]);
    const res = await fetch(`${api.url}/v1/proxies/seeded`, { headers: bearer(ADMIN) });
    expect(res.status).toBe(200);
  });

  // What makes the body cases mean something: each changed one field of a body the route takes whole.
  it('takes every good body the cases were made from (past validation: no 400, 413 or 415)', async () => {
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const [m, op] of Object.entries(ops)) {
        const key = `${m.toUpperCase()} ${path}`;
        const good = fixture.body(key);
        if (!good) continue;
        const res = await send(api.port, {
          name: key,
          op: key,
          method: m.toUpperCase(),
          path: fill(path, fixture),
          headers: { ...fixture.credential(op), 'content-type': good.type },
          body: JSON.stringify(good.json),
        });
        expect([400, 413, 415], `${key}: ${res.status} ${res.text.slice(0, 300)}`).not.toContain(res.status);
        expect(res.status, key).toBeLessThan(500);
      }
    }
  });
});

function diff(
  a: ({ docs: string[] } & Record<string, unknown>) | undefined,
  b: { docs: string[] } & Record<string, unknown>,
) {
  if (!a) return b;
  const gone = a.docs.filter((d) => !b.docs.includes(d));
  const added = b.docs.filter((d) => !a.docs.includes(d));
  const other = Object.keys(b).filter((k) => k !== 'docs' && JSON.stringify(a[k]) !== JSON.stringify(b[k]));
  return { gone, added, other: Object.fromEntries(other.map((k) => [k, [a[k], b[k]]])) };
}
