// Admin auth for a browser: the same Authenticator as the admin API, presented as a Bearer header (the
// CLI), or an HttpOnly cookie set once from `?token=` or the login form. The token never appears in page
// HTML or script, the request log keeps paths only (no query string), and the cookie is scoped to /fleet
// and SameSite=Strict. Everything under /fleet is read-only, so a cookie cannot be used to change state.
// A refused credential — a header, the cookie, `?token=` or the form's — counts against the caller's
// address like any other (middleware/auth-failure-limit.ts): the form is no way around that limit.
import type { Context } from 'hono';
import { deleteCookie, getCookie, setCookie } from 'hono/cookie';
import { createMiddleware } from 'hono/factory';
import {
  type Authenticator,
  type AuthOutcome,
  bearerToken,
  MAX_TOKEN_LENGTH,
  type Principal,
} from '../auth/authenticator.js';
import { AUTH_UNAVAILABLE_RETRY_SECONDS, INSUFFICIENT_SCOPE } from '../auth/middleware.js';
import { noteAuthFailure, noteAuthSuccess } from '../middleware/auth-failure-limit.js';
import { loginPage } from './page.js';

export const COOKIE = 'proxyplane_fleet';
/** Google ID tokens last an hour; static tokens are re-checked on every request anyway. */
const COOKIE_MAX_AGE_S = 8 * 3600;

export type FleetEnv = { Variables: { principal: Principal } };

/** Whether the caller reads HTML (a browser): the fleet's refusals answer it the login form, anyone else JSON. */
export const wantsHtml = (c: Context) => (c.req.header('accept') ?? '').includes('text/html');
const isHttps = (c: Context) =>
  new URL(c.req.url).protocol === 'https:' || c.req.header('x-forwarded-proto') === 'https';

export function rememberToken(c: Context, token: string): void {
  setCookie(c, COOKIE, token, {
    path: '/fleet',
    httpOnly: true,
    sameSite: 'Strict',
    secure: isHttps(c),
    maxAge: COOKIE_MAX_AGE_S,
  });
}

export const forgetToken = (c: Context) => deleteCookie(c, COOKIE, { path: '/fleet' });

function refuse(c: Context, status: 401 | 403 | 503, code: string, reason: string) {
  // 503: the credential could not be checked now — the admin guard's Retry-After, which clients (the CLI's
  // `fleet watch`) wait for and retry, where a 503 without one is an error to them.
  if (status === 503) c.header('Retry-After', String(AUTH_UNAVAILABLE_RETRY_SECONDS));
  if (wantsHtml(c)) return c.html(loginPage(reason), status);
  return c.json({ error: code, message: reason }, status);
}

/**
 * The login form again, saying why the token typed into it (or given as `?token=`) was refused: a valid
 * credential that may not see the page (a crawler token, a Google identity not on the list) is 403 with
 * the reason, one that cannot be checked now 503, anything else 401 without detail.
 */
export function refuseLogin(c: Context, outcome: Extract<AuthOutcome, { ok: false }>) {
  noteAuthFailure(c, outcome.code, 'other'); // the form's token or ?token=, not an Authorization bearer
  if (outcome.code === 'forbidden')
    return c.html(loginPage(`That token is refused: ${outcome.reason}.`), 403);
  if (outcome.code === 'unavailable') {
    return c.html(loginPage('That token cannot be checked right now: try again shortly.'), 503, {
      'Retry-After': String(AUTH_UNAVAILABLE_RETRY_SECONDS),
    });
  }
  return c.html(loginPage('That token was not accepted.'), 401);
}

/**
 * A checked `?token=` refused: the login form to a browser (refuseLogin), and to anyone else (`fleet
 * watch`, a script) what the page's auth answers the same token sent as a Bearer header — the JSON error
 * with its code, WWW-Authenticate and a 503's Retry-After — where the form answered every caller in HTML.
 * Never a cookie.
 */
export function refuseTokenInUrlChecked(c: Context, outcome: Extract<AuthOutcome, { ok: false }>) {
  if (wantsHtml(c)) return refuseLogin(c, outcome);
  noteAuthFailure(c, outcome.code, 'other');
  return refuseOutcome(c, outcome, 'that token was not accepted');
}

/** A refused credential by its outcome, answered by Accept (refuse()); `unknown` is the 401's message. */
function refuseOutcome(c: Context, outcome: Extract<AuthOutcome, { ok: false }>, unknown: string) {
  if (outcome.code === 'forbidden') {
    c.header('WWW-Authenticate', INSUFFICIENT_SCOPE);
    return refuse(c, 403, 'forbidden', outcome.reason);
  }
  if (outcome.code === 'unavailable') return refuse(c, 503, 'unavailable', outcome.reason);
  c.header('WWW-Authenticate', 'Bearer realm="proxyplane"');
  return refuse(c, 401, 'unauthenticated', unknown);
}

export const fleetAuth = (authenticator: Authenticator) =>
  createMiddleware<FleetEnv>(async (c, next) => {
    const header = c.req.header('authorization');
    const cookie = getCookie(c, COOKIE);
    const presented = header !== undefined ? bearerToken(header) : cookie;
    if (presented !== undefined && presented.length > MAX_TOKEN_LENGTH) {
      noteAuthFailure(c, 'unauthenticated');
      return refuse(c, 401, 'unauthenticated', 'token too long');
    }
    const outcome = await authenticator.authenticate(presented);
    if (outcome.ok) {
      c.set('principal', outcome.principal);
      if (outcome.principal.kind !== 'local') noteAuthSuccess(c, presented);
      return next();
    }
    // A stale cookie (rotated token, expired ID token) is dropped so the login form shows next time. One
    // that could not be checked now (Google's certificates unreachable) was never judged: it is kept, so
    // the page that waits out the 503's Retry-After reconnects signed in, not to the login form.
    if (header === undefined && cookie !== undefined && outcome.code !== 'unavailable') forgetToken(c);
    noteAuthFailure(c, outcome.code);
    return refuseOutcome(
      c,
      outcome,
      presented === undefined ? 'sign in with an admin token' : 'that token was not accepted',
    );
  });
