// Every refusal of the fleet page, pinned answer by answer in __snapshots__/refusals.txt: the form's post,
// a `?token=` checked or refused unchecked (Cloud Run, cross-site), and the page's own credential (header,
// cookie), each as a browser, a JSON client and a caller that sends no Accept. Kept: the status, the
// headers a client reads, and the body — the JSON whole, of the login form the message it shows. The pin
// was taken before the HTML-vs-JSON choice became one function (refuse()), so that change is shown to
// answer what was answered before; a change on purpose updates it (`npx vitest run -u <this file>`).
import { describe, expect, it } from 'vitest';
import { MAX_TOKEN_LENGTH } from '../auth/authenticator.js';
import { ADMIN_TOKEN, harness } from '../testing/harness.js';
import { COOKIE } from './auth.js';
import { InMemoryFleetFeed } from './feed.js';
import { PINNED_HEADERS, pinnedAuth } from './testing/pinned-auth.js';

const HEADERS = PINNED_HEADERS;
const auth = pinnedAuth;

const ACCEPTS: Array<[string, Record<string, string>]> = [
  ['browser', { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' }],
  ['json', { accept: 'application/json' }],
  ['no accept', {}],
];
const REFUSED = ['eyJ.not-an.admin', 'eyJ.certs.down', 'nope-nope-nope-nope'];
const TOO_LONG = 'x'.repeat(MAX_TOKEN_LENGTH + 1);

/** Each request: a label, the method and path, its headers, a body; each answered by an app of its own. */
type Req = { label: string; method: string; path: string; headers: Record<string, string>; body?: string };
const FORM = 'application/x-www-form-urlencoded';

function requests(): Req[] {
  const out: Req[] = [];
  for (const [as, accept] of ACCEPTS) {
    for (const token of [...REFUSED, '']) {
      out.push({
        label: `form, ${token || 'no token'}, ${as}`,
        method: 'POST',
        path: '/fleet/login',
        headers: { ...accept, 'content-type': FORM },
        body: new URLSearchParams({ token }).toString(),
      });
    }
    for (const token of REFUSED) {
      for (const path of ['/fleet', '/fleet/api/state']) {
        out.push({
          label: `?token= ${token}, ${as}`,
          method: 'GET',
          path: `${path}?token=${token}`,
          headers: accept,
        });
      }
    }
    out.push({
      label: `?token= from another site, ${as}`,
      method: 'GET',
      path: `/fleet?token=${ADMIN_TOKEN}`,
      headers: { ...accept, 'sec-fetch-site': 'cross-site' },
    });
    const own: Array<[string, Record<string, string>]> = [
      ['no credential', {}],
      ['a bad bearer', { authorization: 'Bearer nope-nope-nope-nope' }],
      ['a bearer too long', { authorization: `Bearer ${TOO_LONG}` }],
      ['a stale cookie', { cookie: `${COOKIE}=rotated-token-rotated-token` }],
      ['a cookie not an admin', { cookie: `${COOKIE}=eyJ.not-an.admin` }],
      ['a cookie not checkable', { cookie: `${COOKIE}=eyJ.certs.down` }],
    ];
    for (const [what, headers] of own) {
      out.push({
        label: `${what}, ${as}`,
        method: 'GET',
        path: '/fleet',
        headers: { ...accept, ...headers },
      });
    }
  }
  return out;
}

async function record(req: Req, fleetTokenInUrl = true): Promise<string> {
  const { app } = harness({ fleet: new InMemoryFleetFeed(), auth, fleetTokenInUrl });
  const res = await app.request(`http://localhost${req.path}`, {
    method: req.method,
    headers: { host: 'localhost', ...req.headers },
    body: req.body,
  });
  const kept = HEADERS.filter((h) => res.headers.has(h)).map((h) => `${h}: ${res.headers.get(h)}`);
  const text = await res.text();
  const shown = /<main class="login"><h1>[^<]*<\/h1><p>(.*?)<\/p>/s.exec(text);
  const body = shown ? `login form: ${shown[1]}` : text;
  const path = req.path.replace(TOO_LONG, '<too long>');
  return [`### ${req.label}: ${req.method} ${path}`, String(res.status), ...kept, '', body, ''].join('\n');
}

async function answers(): Promise<string> {
  const out: string[] = [];
  for (const req of requests()) out.push(await record(req));
  for (const [as, accept] of ACCEPTS) {
    for (const path of ['/fleet', '/fleet/api/state']) {
      const req = {
        label: `?token= on Cloud Run, ${as}`,
        method: 'GET',
        path: `${path}?token=${ADMIN_TOKEN}`,
      };
      out.push(await record({ ...req, headers: accept }, false));
    }
  }
  return out.join('\n');
}

describe('the fleet page refusals', () => {
  it('answer as pinned: status, headers, and the JSON body or the form’s message', async () => {
    await expect(await answers()).toMatchFileSnapshot('./__snapshots__/refusals.txt');
  });
});
