// The worker's HTTP client for the control plane's worker endpoints (docs/gateway-control-plane.md):
// register, ack, runtime, outcomes and the latest snapshot. Every answer comes back as a value, never a
// throw: a success with its body validated against the shared wire schema, or a refusal with its status
// and stable code (status 0 for a network failure or timeout) for controlReaction() to decide on.
import { z } from 'zod';
import { retryAfterMs } from '../../../../shared/src/domain/retry-after.js';
import type { GatewaySnapshot } from '../../../../shared/src/messages/gateway-snapshot.js';
import {
  type AckRequestBody,
  AckResponseBody,
  type OutcomesRequestBody,
  OutcomesResponseBody,
  type RegisterRequestBody,
  RegisterResponseBody,
  type RuntimeRequestBody,
  RuntimeResponseBody,
} from '../../../../shared/src/messages/worker-api.js';
import { type Pause, runSliced } from '../slices.js';
import { checkSnapshotSlices } from './message.js';
import type { TokenSource } from './token.js';

export type ControlAnswer<T> =
  | { ok: true; body: T }
  | {
      ok: false;
      status: number;
      code: string | undefined;
      message: string;
      retryAfterMs?: number;
      /** A runtime report refused as stale_epoch still names the drains under way (contract §4). */
      revokeProxyIds?: string[];
    };

export interface ControlClient {
  register(body: RegisterRequestBody): Promise<ControlAnswer<RegisterResponseBody>>;
  ack(workerId: string, body: AckRequestBody): Promise<ControlAnswer<AckResponseBody>>;
  runtime(workerId: string, body: RuntimeRequestBody): Promise<ControlAnswer<RuntimeResponseBody>>;
  outcomes(workerId: string, body: OutcomesRequestBody): Promise<ControlAnswer<OutcomesResponseBody>>;
  latestSnapshot(workerId: string, sessionId: string): Promise<ControlAnswer<GatewaySnapshot>>;
}

export interface HttpControlClientOptions {
  /** The API's base URL (CONTROL_PLANE_URL). */
  baseUrl: string;
  token: TokenSource;
  timeoutMs: number;
  fetch?: typeof globalThis.fetch;
  /** Between two slices of checking a fetched snapshot (../slices.ts): default, a turn of the event loop. */
  pause?: Pause;
}

/** A 2xx we cannot read: the controller or something in between is broken; retried with backoff. */
const invalidResponse = (method: string, path: string): ControlAnswer<never> => ({
  ok: false,
  status: 502,
  code: 'invalid_response',
  message: `${method} ${path}: the answer does not match its schema`,
});

/** `work`, or a rejection with the signal's reason once it aborts (the work itself is left to finish). */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (err) => {
        signal.removeEventListener('abort', onAbort);
        reject(err);
      },
    );
  });
}

export class HttpControlClient implements ControlClient {
  private readonly base: string;
  private readonly fetch: typeof globalThis.fetch;

  constructor(private readonly o: HttpControlClientOptions) {
    this.base = o.baseUrl.replace(/\/+$/, '');
    this.fetch = o.fetch ?? globalThis.fetch;
  }

  register(body: RegisterRequestBody) {
    return this.call('POST', '/v1/workers/register', RegisterResponseBody, body);
  }

  ack(workerId: string, body: AckRequestBody) {
    return this.call('POST', `/v1/workers/${encodeURIComponent(workerId)}/ack`, AckResponseBody, body);
  }

  runtime(workerId: string, body: RuntimeRequestBody) {
    return this.call(
      'POST',
      `/v1/workers/${encodeURIComponent(workerId)}/runtime`,
      RuntimeResponseBody,
      body,
    );
  }

  outcomes(workerId: string, body: OutcomesRequestBody) {
    return this.call(
      'POST',
      `/v1/workers/${encodeURIComponent(workerId)}/outcomes`,
      OutcomesResponseBody,
      body,
    );
  }

  /** The body checked against the wire schema in slices, as a pulled one is (message.ts). */
  async latestSnapshot(workerId: string, sessionId: string): Promise<ControlAnswer<GatewaySnapshot>> {
    const q = new URLSearchParams({ sessionId });
    const path = `/v1/workers/${encodeURIComponent(workerId)}/snapshot?${q}`;
    const answer = await this.call('GET', path, z.unknown());
    if (!answer.ok) return answer;
    const checked = await runSliced(checkSnapshotSlices(answer.body), this.o.pause);
    if (!checked.ok || checked.message.kind !== 'full') return invalidResponse('GET', path);
    return { ok: true, body: checked.message };
  }

  private async call<S extends z.ZodType>(
    method: string,
    path: string,
    schema: S,
    body?: unknown,
  ): Promise<ControlAnswer<z.output<S>>> {
    let res: Response;
    let text: string;
    // One bound for the whole call, the identity token included: on GCP gcp-metadata sets no timeout on
    // its requests, so a metadata server that never answers would hold this call, and the loop that made
    // it (registration, ACKs, reports), for ever.
    const signal = AbortSignal.timeout(this.o.timeoutMs);
    try {
      const authorization = await untilAborted(this.o.token.header(), signal).catch((err) => {
        // Not waited on again: the next call asks for a fresh token.
        if (signal.aborted) this.o.token.invalidate();
        throw err;
      });
      res = await this.fetch(`${this.base}${path}`, {
        method,
        headers: {
          accept: 'application/json',
          ...(authorization ? { authorization } : {}),
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal,
      });
      text = await res.text();
    } catch (err) {
      // A timeout, a refused connection, a reset: no answer at all.
      return { ok: false, status: 0, code: undefined, message: `${method} ${path}: ${String(err)}` };
    }
    let json: unknown;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = undefined;
    }
    if (res.status === 401) this.o.token.invalidate();
    if (!res.ok) {
      const e = (json ?? {}) as { error?: unknown; message?: unknown; revokeProxyIds?: unknown };
      const revoke = e.revokeProxyIds;
      return {
        ok: false,
        status: res.status,
        code: typeof e.error === 'string' ? e.error : undefined,
        message: typeof e.message === 'string' ? e.message : `${method} ${path}: HTTP ${res.status}`,
        retryAfterMs: retryAfterMs(res.headers.get('retry-after'), Date.now()),
        ...(Array.isArray(revoke) && revoke.every((p) => typeof p === 'string')
          ? { revokeProxyIds: revoke as string[] }
          : {}),
      };
    }
    const parsed = schema.safeParse(json);
    if (!parsed.success) return invalidResponse(method, path);
    return { ok: true, body: parsed.data };
  }
}
