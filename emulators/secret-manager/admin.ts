// The emulator's own admin surface (no GCP equivalent), for tests and the local plane:
//   POST   /emulator/v1/reset                                   forget everything
//   DELETE /emulator/v1/projects/{p}                            forget one project (tests use one each)
//   PUT    /emulator/v1/projects/{p}/secrets/{s}/denials        {"permissions"?: [...]} deny (all when omitted)
//   DELETE /emulator/v1/projects/{p}/secrets/{s}/denials        lift the denial
//   POST   /emulator/v1/projects/{p}/faults                     {"status":"UNAVAILABLE","count"?:1,"secret"?:"s"}
// Errors here are ours, so they use the house shape {"error":"<stable_code>","message":…}.
import { z } from 'zod';
import { ApiError } from './api-error.js';
import type { Controls } from './controls.js';
import type { SecretStore } from './store.js';

const Denial = z.strictObject({ permissions: z.array(z.string()).max(20).optional() });
const Fault = z.strictObject({
  status: z.string(),
  count: z.number().int().optional(),
  secret: z.string().optional(),
});

export type AdminResult = { status: number; body: unknown } | undefined;

export function adminRoute(
  method: string,
  path: string,
  body: unknown,
  store: SecretStore,
  controls: Controls,
): AdminResult {
  const ok = { status: 200, body: {} };
  if (method === 'POST' && path === '/emulator/v1/reset') {
    store.reset();
    controls.reset();
    return ok;
  }
  const project = /^\/emulator\/v1\/projects\/([^/]+)$/.exec(path);
  if (method === 'DELETE' && project) {
    store.reset(project[1]);
    controls.reset(project[1]);
    return ok;
  }
  const denial = /^\/emulator\/v1\/projects\/([^/]+)\/secrets\/([^/]+)\/denials$/.exec(path);
  if (denial && (method === 'PUT' || method === 'DELETE')) {
    if (method === 'DELETE') controls.allow(denial[1]!, denial[2]!);
    else controls.deny(denial[1]!, denial[2]!, parse(Denial, body).permissions ?? []);
    return ok;
  }
  const faults = /^\/emulator\/v1\/projects\/([^/]+)\/faults$/.exec(path);
  if (faults && method === 'POST') {
    const f = parse(Fault, body);
    controls.injectFault(faults[1]!, f.status, f.count ?? 1, f.secret);
    return ok;
  }
  return undefined;
}

function parse<T>(schema: z.ZodType<T>, body: unknown): T {
  const r = schema.safeParse(body ?? {});
  if (!r.success) throw new ApiError('INVALID_ARGUMENT', r.error.issues[0]?.message ?? 'invalid body');
  return r.data;
}

export const adminError = (err: ApiError) => ({
  status: err.httpStatus,
  body: { error: err.status.toLowerCase(), message: err.message },
});
