// The fleet page's JSON routes (GET /fleet/api/state, GET /fleet/api/proxies/{name}), answer by answer on a
// populated fleet: status, the headers a client reads, and the body byte for byte, pinned in
// __snapshots__/api-answers.txt. The pin was taken before these routes became OpenAPI routes with
// schema-typed answers, so that change is shown to send what was sent before; a change of the JSON on
// purpose updates it (`npx vitest run -u <this file>`) and shows up in review as a diff of the answers.
import { describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, harness } from '../testing/harness.js';
import { COOKIE } from './auth.js';
import { populatedFleet } from './testing/fleet-fixtures.js';
import { PINNED_HEADERS, pinnedAuth } from './testing/pinned-auth.js';

const HEADERS = PINNED_HEADERS;
const auth = pinnedAuth;

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const cookie = (token: string) => ({ cookie: `${COOKIE}=${token}` });

/** Each request: a label, the path, its headers. */
const REQUESTS: Array<[string, string, Record<string, string>]> = [
  ['state', '/fleet/api/state', bearer(ADMIN_TOKEN)],
  ['state with the cookie', '/fleet/api/state', cookie(ADMIN_TOKEN)],
  ...['a', 'b', 'c', 'd', 'e', 'f', 'g'].map((name): [string, string, Record<string, string>] => [
    `detail ${name}`,
    `/fleet/api/proxies/${name}`,
    bearer(ADMIN_TOKEN),
  ]),
  ['unknown proxy', '/fleet/api/proxies/nope', bearer(ADMIN_TOKEN)],
  ['not a proxy name', '/fleet/api/proxies/Not_A_Name', bearer(ADMIN_TOKEN)],
  ['state, no credential', '/fleet/api/state', {}],
  ['state, a stale cookie', '/fleet/api/state', cookie('rotated-token-rotated-token')],
  ['detail, a bad token', '/fleet/api/proxies/a', bearer('wrong-token-wrong-token')],
  ['state, not an admin', '/fleet/api/state', bearer('eyJ.not-an.admin')],
  ['detail, not an admin', '/fleet/api/proxies/a', bearer('eyJ.not-an.admin')],
  ['state, credential not checkable', '/fleet/api/state', bearer('eyJ.certs.down')],
];

/** Each answer as text: `### label: GET path`, the status, the headers kept, a blank line, the body. */
async function record(app: ReturnType<typeof harness>['app'], label: string, path: string, headers = {}) {
  const res = await app.request(path, { headers });
  const kept = HEADERS.filter((h) => res.headers.has(h)).map((h) => `${h}: ${res.headers.get(h)}`);
  return [`### ${label}: GET ${path}`, String(res.status), ...kept, '', await res.text(), ''].join('\n');
}

async function answers(): Promise<string> {
  const { app } = harness({ fleet: populatedFleet(), auth });
  const out: string[] = [];
  for (const [label, path, headers] of REQUESTS) out.push(await record(app, label, path, headers));
  // Views not loaded: the 503 the routes answer themselves.
  const unloaded = populatedFleet();
  unloaded.ready = () => Promise.reject(new Error('fleet views not loaded within 15000 ms'));
  const down = harness({ fleet: unloaded, auth }).app;
  for (const path of ['/fleet/api/state', '/fleet/api/proxies/a']) {
    out.push(await record(down, 'not loaded', path, bearer(ADMIN_TOKEN)));
  }
  return out.join('\n');
}

describe('the fleet JSON routes', () => {
  it('answer as pinned: status, headers and body bytes', async () => {
    await expect(await answers()).toMatchFileSnapshot('./__snapshots__/api-answers.txt');
  });
});
