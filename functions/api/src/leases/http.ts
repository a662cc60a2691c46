// HTTP plumbing shared by the discovery and lease routes: zod failures → 400 with a stable code per
// field, store failures → 503, and the JSON response helpers the OpenAPI document describes.
import type { Context, ErrorHandler } from 'hono';
import type { ZodError } from 'zod';
import { ErrorBody } from '../../../../shared/src/domain/leases/wire.js';
import { LeaseStoreError } from '../../../../shared/src/ports/lease-store.js';
import type { StructuredLog } from '../discovery/log.js';
import { recover } from '../discovery/middleware.js';

const FIELD_CODES: Record<string, string> = {
  selector: 'invalid_selector',
  ttlSeconds: 'invalid_ttl',
  target: 'invalid_target',
  exclusive: 'invalid_exclusive',
  result: 'invalid_result',
};

type ValidationResult = { success: true } | { success: false; error: ZodError; target: string };

/** A route hook: the first issue decides the code, so one bad body always gets the same answer. */
export function validationHook(onInvalid: (code: string) => void = () => {}) {
  return (result: ValidationResult, c: Context) => {
    if (result.success) return;
    const issue = result.error.issues[0];
    const field = issue?.path[0];
    let body: { error: string } & Record<string, unknown>;
    if (result.target === 'query') {
      body = { error: 'invalid_query', param: String(field ?? ''), message: issue?.message ?? '' };
    } else if (issue?.code === 'unrecognized_keys') {
      body = { error: 'unknown_field', fields: issue.keys };
    } else {
      const code = typeof field === 'string' ? FIELD_CODES[field] : undefined;
      body = { error: code ?? 'invalid_request', message: issue?.message ?? 'invalid body' };
    }
    onInvalid(body.error);
    return c.json(body, 400);
  };
}

/** Store trouble is the caller's cue to retry (503 + Retry-After), never a 500. */
export function leaseErrors(log: StructuredLog): ErrorHandler {
  const fallback = recover(log);
  return (err, c) => {
    if (err instanceof LeaseStoreError) {
      log(err.kind === 'contended' ? 'WARNING' : 'ERROR', `lease store: ${err.message}`, {
        kind: err.kind,
        cause: String(err.cause),
      });
      c.header('Retry-After', '1');
      const error = err.kind === 'unavailable' ? 'store_unavailable' : err.kind;
      return c.json({ error }, 503);
    }
    return fallback(err, c);
  };
}

export const jsonContent = <T>(schema: T, description: string) => ({
  content: { 'application/json': { schema } },
  description,
});

export const errorResponse = (description: string) => jsonContent(ErrorBody, description);
