// HTTP routes of the admin endpoint (/admin/…, documented in README.md). JSON in, JSON out; errors
// as {"error": "<stable_code>", "message": "…"}.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { AdminError, type ComputeAdmin } from './admin.js';
import type { ApiOperation, QuotaMode } from './faults.js';
import { GceError, readBody, sendJson } from './http-io.js';

type Json = Record<string, unknown>;
type Handler = (admin: ComputeAdmin, body: Json, params: string[], query: URLSearchParams) => unknown;

const INSTANCE = '/admin/projects/([^/]+)/zones/([^/]+)/instances/([^/]+)';
const num = (v: unknown) => (v === undefined ? undefined : (v as number));
const flag = (v: unknown) => {
  if (v !== undefined && typeof v !== 'boolean')
    throw new AdminError(400, 'invalid_argument', 'on must be true or false');
  return v ?? true;
};

const ROUTES: Array<{ method: string; pattern: RegExp; handle: Handler }> = [
  { method: 'GET', pattern: /^\/admin\/healthz$/, handle: () => ({ ok: true }) },
  {
    method: 'GET',
    pattern: /^\/admin\/instances$/,
    handle: (a, _b, _p, q) => ({
      instances: a.instances({
        project: q.get('project') ?? undefined,
        zone: q.get('zone') ?? undefined,
        status: q.get('status') ?? undefined,
      }),
    }),
  },
  { method: 'GET', pattern: /^\/admin\/counters$/, handle: (a) => a.counters() },
  {
    method: 'POST',
    pattern: /^\/admin\/counters\/reset$/,
    handle: (a) => {
      a.resetCounters();
      return a.counters();
    },
  },
  { method: 'GET', pattern: /^\/admin\/faults$/, handle: (a) => a.faults() },
  {
    method: 'DELETE',
    pattern: /^\/admin\/faults$/,
    handle: (a) => {
      a.clearFaults();
      return a.faults();
    },
  },
  {
    method: 'POST',
    pattern: /^\/admin\/faults\/quota$/,
    handle: (a, b) => {
      a.injectQuota({
        count: b.count as number,
        mode: b.mode as QuotaMode | undefined,
        metric: b.metric as string | undefined,
        limit: num(b.limit),
      });
      return a.faults();
    },
  },
  {
    method: 'POST',
    pattern: /^\/admin\/faults\/errors$/,
    handle: (a, b) => {
      a.injectErrors({
        count: num(b.count),
        rate: num(b.rate),
        code: num(b.code),
        operations: b.operations as ApiOperation[] | undefined,
        seed: num(b.seed),
      });
      return a.faults();
    },
  },
  {
    method: 'POST',
    pattern: /^\/admin\/faults\/boot-delay$/,
    handle: (a, b) => {
      a.setBootDelay(b.bootDelayMs as number, num(b.nextInserts));
      return a.faults();
    },
  },
  {
    method: 'POST',
    pattern: /^\/admin\/faults\/unreachable-zones$/,
    handle: (a, b) => {
      a.setUnreachableZones(b.zones as string[]);
      return a.faults();
    },
  },
  {
    method: 'POST',
    pattern: /^\/admin\/reset$/,
    handle: async (a) => {
      await a.reset();
      return { ok: true };
    },
  },
  {
    method: 'GET',
    pattern: new RegExp(`^${INSTANCE}$`),
    handle: (a, _b, [p, z, n]) => a.instance(p!, z!, n!),
  },
  {
    method: 'POST',
    pattern: new RegExp(`^${INSTANCE}/stop$`),
    handle: (a, _b, [p, z, n]) => a.stopInstance(p!, z!, n!),
  },
  {
    method: 'POST',
    pattern: new RegExp(`^${INSTANCE}/preempt$`),
    handle: (a, _b, [p, z, n]) => a.preemptInstance(p!, z!, n!),
  },
  {
    method: 'POST',
    pattern: new RegExp(`^${INSTANCE}/backdate$`),
    handle: (a, b, [p, z, n]) =>
      a.backdate(p!, z!, n!, {
        creationTimestamp: b.creationTimestamp as string | undefined,
        ageMs: num(b.ageMs),
      }),
  },
  {
    method: 'POST',
    pattern: new RegExp(`^${INSTANCE}/proxy/kill$`),
    handle: (a, _b, [p, z, n]) => a.killProxy(p!, z!, n!),
  },
  {
    method: 'POST',
    pattern: new RegExp(`^${INSTANCE}/proxy/revive$`),
    handle: (a, _b, [p, z, n]) => a.reviveProxy(p!, z!, n!),
  },
  {
    method: 'POST',
    pattern: new RegExp(`^${INSTANCE}/proxy/hang$`),
    handle: (a, b, [p, z, n]) => a.hangProxy(p!, z!, n!, flag(b.on)),
  },
  {
    method: 'POST',
    pattern: new RegExp(`^${INSTANCE}/proxy/leak$`),
    handle: (a, b, [p, z, n]) => a.leakProxy(p!, z!, n!, flag(b.on)),
  },
];

export async function handleAdminRequest(
  admin: ComputeAdmin,
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
): Promise<void> {
  const method = req.method ?? 'GET';
  const candidates = ROUTES.filter((r) => r.pattern.test(url.pathname));
  const route = candidates.find((r) => r.method === method);
  try {
    if (!route) {
      throw candidates.length > 0
        ? new AdminError(405, 'method_not_allowed', `${method} is not allowed on ${url.pathname}`)
        : new AdminError(404, 'not_found', `no admin route ${url.pathname}`);
    }
    let body: Json = {};
    if (method === 'POST') {
      const raw = (await readBody(req, 64 * 1024)).toString('utf8').trim();
      const parsed: unknown = raw === '' ? {} : JSON.parse(raw);
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
        throw new AdminError(400, 'invalid_json', 'the body must be a JSON object');
      }
      body = parsed as Json;
    }
    const params = route.pattern.exec(url.pathname)!.slice(1).map(decodeURIComponent);
    sendJson(res, 200, await route.handle(admin, body, params, url.searchParams));
  } catch (err) {
    if (err instanceof AdminError)
      return sendJson(res, err.status, { error: err.code, message: err.message });
    if (err instanceof SyntaxError)
      return sendJson(res, 400, { error: 'invalid_json', message: err.message });
    if (err instanceof URIError) return sendJson(res, 400, { error: 'invalid_path', message: err.message });
    if (err instanceof GceError) {
      return sendJson(
        res,
        413,
        { error: 'body_too_large', message: String((err as Error).message) },
        { Connection: 'close' },
      );
    }
    sendJson(res, 500, { error: 'internal', message: String(err) });
  }
}
