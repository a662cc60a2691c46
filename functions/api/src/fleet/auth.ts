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
import type { ErrorCode } from '../errors.js';
import { noteAuthFailure, noteAuthSuccess } from '../middleware/auth-failure-limit.js';
import { loginPage } from './page.js';

export const COOKIE = 'proxyplane_fleet';
/** Google ID tokens last an hour; static tokens are re-checked on every request anyway. */
const COOKIE_MAX_AGE_S = 8 * 3600;

export type FleetEnv = { Variables: { principal: Principal } };
type Refused = Extract<AuthOutcome, { ok: false }>;

/** Whether the caller reads HTML (a browser): the fleet's refusals answer it the login form, anyone else JSON. */
const wantsHtml = (c: Context) => (c.req.header('accept') ?? '').includes('text/html');
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

/** How a refusal was reached: a token offered to sign in (the form's post, a `?token=` link), or neither. */
export type SignIn = 'form' | 'link';

/**
 * A refusal of the fleet page, and the one place that chooses how it is answered: the login form showing
 * why (`shown`, else the message) to a browser (Accept: text/html) and to the form's own post whatever
 * its Accept, the API's error body to anyone else (`fleet watch`, a script). A refused credential's
 * `challenge` is its WWW-Authenticate, on the JSON and on the page's own form — not on a sign-in's form,
 * which answers the token typed or linked. A 503 (the credential could not be checked now) carries the
 * admin guard's Retry-After, which clients (the CLI's `fleet watch`) wait for and retry, where a 503
 * without one is an error to them. Never a cookie.
 */
export function refuse(
  c: Context,
  status: 400 | 401 | 403 | 503,
  code: ErrorCode,
  message: string,
  { shown, challenge, signIn }: { shown?: string; challenge?: string; signIn?: SignIn } = {},
) {
  if (status === 503) c.header('Retry-After', String(AUTH_UNAVAILABLE_RETRY_SECONDS));
  const html = signIn === 'form' || wantsHtml(c);
  if (challenge !== undefined && !(html && signIn)) c.header('WWW-Authenticate', challenge);
  if (html) return c.html(loginPage(shown ?? message), status);
  return c.json({ error: code, message }, status);
}

/**
 * A refused credential by its outcome, answered by refuse(): a valid credential that may not see the
 * page (a crawler token, a Google identity not on the list) is 403 with the reason, one that cannot be
 * checked now 503, anything else 401 with `unknown` as its message. A token offered to sign in
 * (`signIn`) has the form say it of "that token" (the 401's without detail).
 */
function refuseOutcome(c: Context, outcome: Refused, unknown: string, signIn?: SignIn) {
  const says = (words: string) => (signIn ? { shown: words, signIn } : {});
  if (outcome.code === 'forbidden') {
    return refuse(c, 403, 'forbidden', outcome.reason, {
      challenge: INSUFFICIENT_SCOPE,
      ...says(`That token is refused: ${outcome.reason}.`),
    });
  }
  if (outcome.code === 'unavailable') {
    return refuse(
      c,
      503,
      'unavailable',
      outcome.reason,
      says('That token cannot be checked right now: try again shortly.'),
    );
  }
  return refuse(c, 401, 'unauthenticated', unknown, {
    challenge: 'Bearer realm="proxyplane"',
    ...says('That token was not accepted.'),
  });
}

/**
 * A token offered to sign in (typed into the form, or given as `?token=`) refused: counted against the
 * caller's address as not an Authorization bearer, and answered by refuseOutcome() — the login form again
 * saying why to a browser and to the form's post, to a JSON client following a link what the page's
 * auth answers the same token sent as a Bearer header.
 */
export function refuseLogin(c: Context, outcome: Refused, via: SignIn) {
  noteAuthFailure(c, outcome.code, 'other');
  return refuseOutcome(c, outcome, 'that token was not accepted', via);
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
