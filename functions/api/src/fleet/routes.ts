// The fleet page as a sub-app, mounted at /fleet: the page, a proxy's detail, their JSON (the CLI's
// `fleet watch` reads /fleet/api/state), and the live stream (SSE). All of it is read-only and behind
// admin auth (auth.ts); the assets carry nothing private and are public so the login page is styled.
// The two JSON routes are OpenAPI routes (fleet-openapi.ts): /openapi.json describes them from the schemas
// their answers are typed by (fleet-schemas.ts).
import { OpenAPIHono } from '@hono/zod-openapi';
import type { Context, MiddlewareHandler } from 'hono';
import { secureHeaders } from 'hono/secure-headers';
import { streamSSE } from 'hono/streaming';
import type { Logger } from '../../../../shared/src/adapters/log/json-logger.js';
import type { Clock } from '../../../../shared/src/ports/clock.js';
import type { Authenticator } from '../auth/authenticator.js';
import { ApiError } from '../errors.js';
import { refusalHeldBack } from '../middleware/auth-failure-limit.js';
import { limitBody } from '../middleware/body-limit.js';
import { noBody } from '../middleware/no-body.js';
import { validationHook } from '../validation/hook.js';
import { type FleetEnv, fleetAuth, forgetToken, refuse, refuseLogin, rememberToken } from './auth.js';
import { FLEET_JS } from './client-script.js';
import { buildDetail } from './detail.js';
import type { FleetFeed } from './feed.js';
import { fleetProxyRoute, fleetStateRoute, registerFleetSecurity } from './fleet-openapi.js';
import { detailPage, fleetPage, loginPage } from './page.js';
import { FLEET_DEBOUNCE_MS, SharedFleetView } from './shared-view.js';
import { FLEET_CSS } from './styles.js';
import { buildFleetView } from './view-model.js';

export interface FleetDeps {
  feed: FleetFeed;
  auth: Authenticator;
  clock: Clock;
  log: Logger;
  /** Coalesces bursts of document changes into one event (default 250 ms): the least gap between two
   *  builds of the streams' view, which grows with what a build costs (shared-view.ts). */
  debounceMs?: number;
  /** The monotonic clock that times the view's builds (default performance.now). */
  monotonicNow?: () => number;
  /** Re-sends when time alone changed the view (leases, cooldowns ending), and keeps proxies from idling
   *  the connection out (default 5 s). */
  refreshMs?: number;
  /** Open streams beyond this are refused with 503 (default MAX_FLEET_STREAMS). */
  maxStreams?: number;
  /**
   * Whether `?token=` signs in (default true). False on Cloud Run: its request log keeps the whole URL, so
   * an admin token in the address would be kept in Cloud Logging; the page refuses it unchecked (400): the
   * login form to a browser, the API's error body to a JSON client (`fleet watch`, a script).
   */
  tokenInUrl?: boolean;
  /** The app's per-caller rate limit (middleware/caller-rate-limit.ts), run after the page's auth. */
  callerLimit?: MiddlewareHandler;
}

/**
 * Open fleet streams an API instance serves at once. Each holds one of the instance's Cloud Run request
 * slots (max_instance_request_concurrency, 80 in terraform/run.tf) until Cloud Run's request timeout cuts
 * it and the page reconnects: a cap at or above the slots never refuses, and open pages would leave no
 * slot for leases and worker reports. A quarter of the slots, the rest kept for the API's own traffic.
 */
export const MAX_FLEET_STREAMS = 20;

const noStore = { 'Cache-Control': 'no-store' };
/** The API's stable error body (errors.ts), as the 404 of fleet-openapi.ts documents it. */
const noSuchProxy = () => new ApiError(404, 'not_found', 'no such proxy').body();
const FORM = 'application/x-www-form-urlencoded';

/**
 * Whether a browser says this request came from another site: its Sec-Fetch-Site (every current browser
 * sends it to a secure origin: https, localhost, loopback), else an Origin whose host is not ours ("null"
 * included: a sandboxed or opaque origin; every POST carries one). A page anywhere could otherwise post to
 * /fleet/logout and sign an admin out (Set-Cookie is honoured on a cross-site top-level navigation,
 * SameSite=Strict or not), or to /fleet/login with its own token. A request with neither header is served:
 * curl and scripts sign in as before — and so is a link followed to a plain-http page on a LAN name, which
 * carries neither (see the ?token= sign-in below).
 * (Hono's csrf() refuses those too, and compares Origin with a URL whose scheme behind Cloud Run's front
 * end is http.)
 */
function crossSite(c: Context): boolean {
  const site = c.req.header('sec-fetch-site');
  if (site !== undefined) return site !== 'same-origin' && site !== 'none';
  const origin = c.req.header('origin');
  if (origin === undefined) return false;
  try {
    return new URL(origin).host !== c.req.header('host');
  } catch {
    return true;
  }
}
const CROSS_SITE = 'a sign-in or sign-out from another site is refused';
const refuseCrossSite: MiddlewareHandler = async (c, next) => {
  if (crossSite(c)) throw new ApiError(403, 'forbidden', CROSS_SITE);
  await next();
};

/**
 * A `?token=` refused unchecked, answered by refuse(): the login form saying why to a browser, the API's
 * error body to anyone else (`fleet watch`, a script) — never a cookie.
 */
const refuseTokenInUrl = (
  c: Context,
  status: 400 | 403,
  code: 'invalid_request' | 'forbidden',
  why: string,
) =>
  refuse(c, status, code, `${why} Sign in with the form at /fleet/login.`, {
    shown: `${why} Sign in with the form below.`,
  });

export function fleetApp(deps: FleetDeps) {
  const app = new OpenAPIHono<FleetEnv>({ defaultHook: validationHook });
  registerFleetSecurity(app.openAPIRegistry);
  // Defence in depth behind the escaping (escape.ts): the page runs only its own script and style, talks
  // only to its own origin, posts forms only there, and is never framed (a click-jacked "Sign out").
  app.use(
    '*',
    secureHeaders({
      contentSecurityPolicy: {
        defaultSrc: ["'none'"],
        scriptSrc: ["'self'"],
        styleSrc: ["'self'"],
        connectSrc: ["'self'"],
        imgSrc: ["'self'", 'data:'],
        formAction: ["'self'"],
        frameAncestors: ["'none'"],
        baseUri: ["'none'"],
      },
      xFrameOptions: 'DENY',
      referrerPolicy: 'same-origin',
    }),
  );
  const now = () => deps.clock.now();
  const view = () => buildFleetView(deps.feed.inputs(), now());
  // One view, built and serialised once, for every stream and every poll of the state (`fleet watch`) of the
  // moment: each stream built and serialised the whole fleet itself on every change — at 10,000 proxies
  // some 5–8 MB and 100–200 ms of the event loop per stream per send, several times a second under lease
  // traffic — and each poll did once more. A view is rebuilt no sooner than the debounce and four times
  // the last build's cost after the last build, and reused (never older) that long (shared-view.ts); a
  // change any stream hears makes a later send build anew. The HTML page renders its own fresh view (one
  // per page load, whose rows it renders as HTML anyway), and so does a proxy's detail.
  const debounceMs = deps.debounceMs ?? FLEET_DEBOUNCE_MS;
  const shared = new SharedFleetView(view, debounceMs, deps.monotonicNow ?? (() => performance.now()));
  // Views not loaded (Firestore unreachable past the feed's bound): a retryable 503, like the lease routes.
  const ready = async () => {
    try {
      await deps.feed.ready();
    } catch (err) {
      throw new ApiError(
        503,
        'unavailable',
        'the fleet view is not loaded yet',
        { retryAfterSeconds: 2 },
        { cause: err },
      );
    }
  };
  let streams = 0;

  // Where the platform keeps request URLs whole in its log (Cloud Run), a `?token=` is refused on every
  // route of the page, before any of them: the assets and /fleet/login answered one 200 while /fleet
  // refused it, and the token sat in Cloud Logging all the same. Not checked either: whatever it is, it is
  // in the platform's request log now.
  if (deps.tokenInUrl === false) {
    app.use('*', async (c, next) => {
      if (c.req.query('token') === undefined) return next();
      return refuseTokenInUrl(
        c,
        400,
        'invalid_request',
        'A token in the address is refused here: the platform keeps request URLs in its request log (rotate a token that was sent in an address).',
      );
    });
  }
  const asset = (body: string, type: string) => () =>
    new Response(body, { headers: { 'Content-Type': type, 'Cache-Control': 'public, max-age=300' } });
  app.get('/assets/fleet.js', asset(FLEET_JS, 'text/javascript; charset=utf-8'));
  app.get('/assets/fleet.css', asset(FLEET_CSS, 'text/css; charset=utf-8'));

  app.get('/login', (c) => c.html(loginPage('Sign in with an admin token.')));
  app.post('/login', refuseCrossSite, async (c) => {
    // The login form posts application/x-www-form-urlencoded (HTML's default enctype) and nothing else is
    // accepted: Hono's parseBody() threw on a malformed multipart body (500 and an ERROR line per request),
    // while URLSearchParams reads any bytes as a form, so what is left to refuse is a wrong media type.
    const mediaType = (c.req.header('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
    if (mediaType !== FORM) {
      throw new ApiError(415, 'unsupported_media_type', `Content-Type must be ${FORM}`);
    }
    const held = refusalHeldBack(c); // a known bearer alongside does not get this token checked
    if (held) return held;
    const token = new URLSearchParams(await c.req.text()).get('token')?.trim() ?? '';
    const outcome = await deps.auth.authenticate(token || undefined);
    if (!outcome.ok) return refuseLogin(c, outcome, 'form');
    rememberToken(c, token);
    return c.redirect('/fleet', 303);
  });
  app.post('/logout', refuseCrossSite, (c) => {
    forgetToken(c);
    return c.redirect('/fleet/login', 303);
  });
  // `?token=` once: checked, kept in the cookie, and dropped from the address bar (and history) at once.
  app.use('*', async (c, next) => {
    const token = c.req.query('token');
    if (token === undefined || c.req.method !== 'GET') return next(); // refused above where URLs are logged
    // A link on another site carrying its own token would sign the admin in as that token (login CSRF), as
    // a cross-site POST /fleet/login would: refused the same way, before the token is checked. A link opened
    // from the terminal (`npm start` prints one) or typed is Sec-Fetch-Site: none, and served. On plain http
    // to a name other than localhost or loopback a browser sends neither header on a link, from the terminal
    // or from another site alike: nothing here can tell them apart, and such a link still signs in
    // (docs/cli.md § The fleet page says so; https or localhost closes it).
    if (crossSite(c)) {
      return refuseTokenInUrl(
        c,
        403,
        'forbidden',
        'A sign-in from another site is refused: open the link from your terminal, or paste it in the address bar.',
      );
    }
    const held = refusalHeldBack(c);
    if (held) return held;
    const outcome = await deps.auth.authenticate(token);
    if (!outcome.ok) return refuseLogin(c, outcome, 'link');
    rememberToken(c, token);
    // The path as sent, still percent-encoded: Hono's c.req.path is decoded, and a decoded %0D%0A is a line
    // break a Location header cannot hold (the redirect threw: 500).
    return c.redirect(new URL(c.req.url).pathname, 303);
  });
  app.use('*', fleetAuth(deps.auth));
  if (deps.callerLimit) app.use('*', deps.callerLimit);
  // A body on these GETs is refused (400 unexpected_body), not ignored, as on every admin GET: after the
  // page's auth (a caller without a credential gets its 401 unread), bounded first — the app's body limit
  // skips the page's routes (app.ts) — and, for the stream, before a slot is counted.
  const bounded = limitBody({ maxBytes: 1024 });
  const bodyless = noBody();

  app.get('/', bounded, bodyless, async (c) => {
    await ready();
    return c.html(fleetPage(view(), now()), 200, noStore);
  });
  app.openapi({ ...fleetStateRoute, middleware: [bounded, bodyless] as const }, async (c) => {
    await ready();
    // The shared view's JSON as it is (JSON.stringify(view), what c.json sent): `fleet watch` polls this
    // every second, and a fresh build and stringify per poll cost 200–600 ms of the loop at 10,000 proxies.
    // Typed as the route's JSON (FleetView): the body is that object's JSON, serialised once with the key.
    const { data } = shared.get().view;
    return c.body(data, 200, { ...noStore, 'Content-Type': 'application/json' }) as never;
  });
  const detailOf = async (name: string) => {
    await ready();
    const inputs = deps.feed.inputs();
    const p = inputs.proxies.get(name);
    return p ? buildDetail(p, inputs, now()) : null;
  };
  app.openapi({ ...fleetProxyRoute, middleware: [bounded, bodyless] as const }, async (c) => {
    const d = await detailOf(c.req.valid('param').name);
    return d ? c.json(d, 200, noStore) : c.json(noSuchProxy(), 404);
  });
  app.get('/proxies/:name', bounded, bodyless, async (c) => {
    const d = await detailOf(c.req.param('name'));
    return d ? c.html(detailPage(d), 200, noStore) : c.json(noSuchProxy(), 404);
  });

  app.get('/events', bounded, bodyless, async (c) => {
    // Hono answers a HEAD with its GET's response, body dropped unread: a stream started for it was never
    // read nor cancelled, so it held its slot, its feed subscription and its timers for good (a hundred
    // HEADs refused every fleet stream with 503 until the instance restarted). Headers only.
    if (c.req.method === 'HEAD')
      return c.body(null, 200, { ...noStore, 'Content-Type': 'text/event-stream' });
    if (streams >= (deps.maxStreams ?? MAX_FLEET_STREAMS)) {
      return c.json({ error: 'unavailable', message: 'too many open fleet streams' }, 503, {
        'Retry-After': '5',
      });
    }
    // Counted before the wait for the views, so a burst arriving during a cold load cannot pass the check
    // together; released on every way out.
    streams++;
    let counted = true;
    const release = () => {
      if (counted) streams--;
      counted = false;
    };
    const gone = c.req.raw.signal;
    try {
      await ready();
    } catch (err) {
      release();
      throw err;
    }
    // The client left while the views loaded: nothing to stream to, and node-server would wait for a
    // 'drain' that never comes on its closed socket.
    if (gone.aborted) {
      release();
      return c.body(null, 204);
    }
    c.header('Cache-Control', 'no-store');
    c.header('X-Accel-Buffering', 'no');
    return streamSSE(c, async (stream) => {
      let lastKey = '';
      let seq = 0;
      let pending: NodeJS.Timeout | null = null;
      // One write at a time: a client that does not read blocks it, and a view or keep-alive queued behind
      // it on every change and every refresh would grow without bound. A call skipped meanwhile (a change's
      // timer, a refresh) is owed one send when the write ends: at 10,000 proxies an event is 5–8 MB and a
      // write often outlasts the debounce, and a change whose timer fired during it waited for the next
      // refresh (5 s). Still one write in flight, and at most one send owed, whatever was skipped.
      let writing = false;
      let missed = false;
      const exclusive = async (write: () => Promise<unknown>) => {
        if (writing) {
          missed = true;
          return;
        }
        writing = true;
        try {
          await write();
        } finally {
          writing = false;
          // Not once the stream has ended (its finally aborts it): nothing to send to, no timer to arm.
          if (missed && !stream.aborted) {
            missed = false;
            void send().catch(() => {});
          }
        }
      };
      const later = (ms: number) => {
        pending ??= setTimeout(() => {
          pending = null;
          void send().catch(() => {});
        }, ms);
      };
      const send = (): Promise<void> =>
        exclusive(async () => {
          // A send that goes ahead takes the place of a timer's: none left behind to fire after the stream
          // ends. One skipped behind a write in flight leaves the timer be: the send owed when the write
          // ends (exclusive) carries the change too, whichever comes first.
          if (pending) clearTimeout(pending);
          pending = null;
          const { view: v, dueInMs } = shared.get();
          // Changes the view does not hold yet (its rebuild waits out the gap): sent once it is built.
          if (dueInMs !== null) later(dueInMs);
          if (v.key === lastKey) return;
          lastKey = v.key;
          await stream.writeSSE({ event: 'fleet', data: v.data, id: String(++seq), retry: 3000 });
        });
      const schedule = () => {
        shared.changed();
        later(debounceMs);
      };
      const unwatch = shared.watch();
      const unsubscribe = deps.feed.subscribe(schedule);
      const refresh = setInterval(() => {
        void send()
          .then(() => exclusive(() => stream.write(': keep-alive\n\n')))
          .catch(() => {});
      }, deps.refreshMs ?? 5000);
      try {
        // Registered before the first write, which a client that does not read never lets finish; the
        // request's own signal too (node-server aborts it when the connection closes).
        const ended = new Promise<void>((resolve) => {
          stream.onAbort(resolve);
          if (gone.aborted || stream.aborted) resolve();
          gone.addEventListener('abort', () => resolve(), { once: true });
        });
        void send().catch(() => {});
        await ended;
      } finally {
        unsubscribe();
        clearInterval(refresh);
        if (pending) clearTimeout(pending);
        // The last stream gone drops the view (shared-view.ts).
        unwatch();
        release();
        if (!stream.aborted) stream.abort();
      }
    });
  });
  return app;
}
