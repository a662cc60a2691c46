// Per-caller request rates on the crawler and admin routes (contract §8: limits on every endpoint): a token
// bucket per (route class, authenticated principal) in this instance's memory (token-bucket.ts), so that a
// crawler looping on acquire — a bug, a leaked token — costs its own bucket, not everyone's Firestore reads
// and writes. It runs after authentication: a request without a principal passes on untouched (it was
// refused before, or its route is public: /healthz, /v1/echo; the worker routes have their own limits), so
// no unauthenticated caller ever adds a key, and the map is bounded anyway. A refusal is answered before
// the body is read and the route runs: it changes nothing. Defaults and reasoning: docs/api.md § Rate limits.
import type { MiddlewareHandler } from 'hono';
import { createMiddleware } from 'hono/factory';
import type { Principal } from '../auth/authenticator.js';
import type { ErrorBody } from '../errors.js';
import { RateLimiter, type RateSpec } from './token-bucket.js';

export const CALLER_CLASSES = [
  'lease-acquire',
  'lease-other',
  'discovery',
  'admin-write',
  'admin-read',
] as const;
export type CallerClass = (typeof CALLER_CLASSES)[number];
export type CallerRates = Record<CallerClass, RateSpec>;

/**
 * Sized so that one crawler token shared by 300 crawlers, all on one API instance, never meets them
 * (docs/api.md § Rate limits has the arithmetic): acquires at 3/s each, a report and a release per lease
 * plus renewals every TTL/3, discovery all at once at a restart; admins are people, CI and the CLI's
 * one-request-at-a-time `apply`. The burst is what a whole fleet restarting at once sends.
 */
export const DEFAULT_CALLER_RATES: CallerRates = {
  'lease-acquire': { perSecond: 1000, burst: 2000 },
  'lease-other': { perSecond: 2000, burst: 4000 },
  discovery: { perSecond: 50, burst: 1000 },
  'admin-write': { perSecond: 50, burst: 500 },
  'admin-read': { perSecond: 100, burst: 1000 },
};

/** The environment variable that sets a class's rate (config.ts). */
export const rateEnvName = (cls: CallerClass) => `RATE_LIMIT_${cls.toUpperCase().replace('-', '_')}`;

const reads = new Set(['GET', 'HEAD', 'OPTIONS']);

/** The class of a request: its route, and for the admin surface whether it reads or writes. */
export function callerClass(method: string, path: string): CallerClass {
  if (path === '/v1/leases' && method === 'POST') return 'lease-acquire';
  if (path === '/v1/leases' || path.startsWith('/v1/leases/')) return 'lease-other';
  if (path === '/v1/proxies' && (method === 'GET' || method === 'HEAD')) return 'discovery';
  return reads.has(method) ? 'admin-read' : 'admin-write';
}

/** Who is calling, as a bucket key: one bucket per identity, whatever the route. */
export function principalKey(p: Principal): string {
  if (p.kind === 'google') return `google:${p.email}`;
  return p.kind === 'token' ? `token:${p.name}` : 'local';
}

export interface CallerLimitOptions {
  rates: CallerRates;
  /** Milliseconds, monotonic (performance.now in production; a test's own clock). */
  now: () => number;
  /** Buckets held at most (the stalest evicted first). */
  maxKeys?: number;
  /** Told of each refusal (the /metrics counter). */
  refused?: (cls: CallerClass) => void;
}

type Env = { Variables: { principal?: Principal; callerLimited?: true } };

/**
 * The middleware. Mount it after every authentication middleware of the app (app.ts) and after the ones
 * that sub-apps run themselves (the fleet page, /v1/gateway): each request is counted once, by the first
 * instance that sees its principal.
 */
export function callerRateLimit(opts: CallerLimitOptions): MiddlewareHandler & { limiter: RateLimiter } {
  const limiter = new RateLimiter(opts.now, opts.maxKeys);
  const mw = createMiddleware<Env>(async (c, next) => {
    const principal = c.get('principal');
    if (!principal || c.get('callerLimited')) return next();
    c.set('callerLimited', true);
    const cls = callerClass(c.req.method, c.req.path);
    const d = limiter.take(`${cls}|${principalKey(principal)}`, opts.rates[cls]);
    if (d.ok) return next();
    opts.refused?.(cls);
    const body: ErrorBody = {
      error: 'rate_limited',
      message: `too many ${cls} requests from this caller; retry after ${d.retryAfterSeconds} s`,
    };
    return c.json(body, 429, { 'Retry-After': String(d.retryAfterSeconds) });
  });
  return Object.assign(mw, { limiter });
}
