// GET /v1/proxies a page at a time, on the Firestore emulator with the real adapters and the lease
// service's discovery view (every middleware of createApp): 7 proxies in pages of 3 (3+3+1, the last
// token null), with a store filter and with one applied after reading, with proxies created between two
// pages, what a page reads from Firestore (its own proxies and their lease states, not the fleet), and the
// whole fleet through the typed client and through `proxyplane proxies list`, each following the pages.

import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Firestore } from '@google-cloud/firestore';
import { serve } from '@hono/node-server';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Collections } from '../../shared/src/adapters/firestore/collections.js';
import { LEASE_COLLECTIONS } from '../../shared/src/adapters/firestore/lease-collections.js';
import { LeaseClient } from '../../shared/src/client/index.js';
import { ManualClock } from '../../shared/src/ports/clock.js';
import { cliInProcess } from '../support/cli-process.js';
import { clearProject, releaseProject, testProjectId } from '../support/emulators.js';
import { ADMIN_TOKEN, leaseTestApp, proxy, writeFleet } from '../support/leases.js';
import { type FirestoreRead, recordingFirestore } from '../support/recording-firestore.js';

const projectId = testProjectId('demo-list-paging');
const db = new Firestore({ projectId });
const CRAWLER = 'list-paging-crawler-token-0123';
const dir = mkdtempSync(join(tmpdir(), 'list-paging-test-'));

const NAMES = ['p1', 'p2', 'p3', 'p4', 'p5', 'p6', 'p7'];
/** p1 p3 p5 p7 in eu, the others in us; p2 and p5 unhealthy. */
const fleet = () =>
  NAMES.map((name, i) =>
    proxy(name, {
      attributes: { region: i % 2 === 0 ? 'eu' : 'us' },
      phase: name === 'p2' || name === 'p5' ? 'Unhealthy' : 'Ready',
    }),
  );

let app: ReturnType<typeof leaseTestApp>['app'];
let stop: (() => Promise<void>) | undefined;
let reads: FirestoreRead[] = [];

beforeEach(async () => {
  await clearProject(projectId);
  await writeFleet(db, fleet());
  reads = [];
  const built = leaseTestApp({
    firestore: recordingFirestore(new Firestore({ projectId }), reads),
    clock: new ManualClock(new Date('2026-03-01T00:00:00Z')),
    secrets: { access: async () => 'u:p' },
    lease: { tokens: [{ name: 'c1', token: CRAWLER }] },
  });
  app = built.app;
  stop = () => built.leases.stop();
});
afterEach(async () => {
  await stop?.();
  stop = undefined;
});
afterAll(async () => {
  await db.terminate();
  await releaseProject(projectId);
  rmSync(dir, { recursive: true, force: true });
});

type Page = { proxies: Array<{ name: string }>; count: number; nextPageToken?: string | null };

async function get(
  path: string,
  token = CRAWLER,
): Promise<{ status: number; body: Page & Record<string, unknown> }> {
  const res = await app.request(path, { headers: { authorization: `Bearer ${token}` } });
  return { status: res.status, body: (await res.json()) as Page & Record<string, unknown> };
}

const names = (p: Page) => p.proxies.map((x) => x.name);

describe('GET /v1/proxies?pageSize= on Firestore', () => {
  it('7 proxies in pages of 3: 3, 3 and 1, in name order, the last token null — for a crawler and an admin', async () => {
    for (const token of [CRAWLER, ADMIN_TOKEN]) {
      const first = await get('/v1/proxies?pageSize=3', token);
      expect(first.status).toBe(200);
      expect(first.body).toMatchObject({ count: 3, nextPageToken: expect.any(String) });
      expect(names(first.body)).toEqual(['p1', 'p2', 'p3']);
      const second = await get(`/v1/proxies?pageSize=3&pageToken=${first.body.nextPageToken}`, token);
      expect(names(second.body)).toEqual(['p4', 'p5', 'p6']);
      expect(second.body.count).toBe(3);
      const third = await get(`/v1/proxies?pageSize=3&pageToken=${second.body.nextPageToken}`, token);
      expect(names(third.body)).toEqual(['p7']);
      expect(third.body).toMatchObject({ count: 1, nextPageToken: null });
    }
    // Unpaged, as before: every proxy in one answer, no token.
    const all = await get('/v1/proxies');
    expect(names(all.body)).toEqual(NAMES);
    expect(all.body).not.toHaveProperty('nextPageToken');
  });

  it('pages a filtered listing: attr. in the query, healthy after reading (a short page, never a skipped proxy)', async () => {
    const pagesOf = async (query: string) => {
      const out: string[][] = [];
      let token: string | null = null;
      do {
        const { status, body } = await get(
          `/v1/proxies?${query}&pageSize=3${token === null ? '' : `&pageToken=${token}`}`,
        );
        expect(status).toBe(200);
        out.push(names(body));
        token = body.nextPageToken ?? null;
      } while (token !== null && out.length < 10);
      return out;
    };
    expect(await pagesOf('attr.region=eu')).toEqual([['p1', 'p3', 'p5'], ['p7']]);
    // The pages read p1–p3, p4–p6, p7: p2 and p5 are left out of theirs, which are shorter for it.
    expect(await pagesOf('healthy=true')).toEqual([['p1', 'p3'], ['p4', 'p6'], ['p7']]);
    expect(await pagesOf('attr.region=eu&healthy=true&phase=Ready')).toEqual([['p1', 'p3', 'p7']]);
    // A token of one listing is refused with another's filters, before anything is read.
    const eu = await get('/v1/proxies?attr.region=eu&pageSize=1');
    reads.length = 0;
    const other = await get(`/v1/proxies?attr.region=us&pageSize=1&pageToken=${eu.body.nextPageToken}`);
    expect(other.status).toBe(400);
    expect(other.body).toMatchObject({ error: 'invalid_request', issues: [{ path: 'pageToken' }] });
    expect(reads).toEqual([]);
  });

  it('proxies created between two pages: those after the cursor are on a later page, once; none is listed twice', async () => {
    const first = await get('/v1/proxies?pageSize=3');
    expect(names(first.body)).toEqual(['p1', 'p2', 'p3']);
    // Before the cursor (p0, p25): not on any later page of this pass. After it (p35, p9): listed, once.
    await writeFleet(db, [proxy('p0'), proxy('p25'), proxy('p35'), proxy('p9')]);
    const rest: string[] = [];
    let token = first.body.nextPageToken ?? null;
    for (let pages = 0; token !== null && pages < 10; pages++) {
      const { body } = await get(`/v1/proxies?pageSize=3&pageToken=${token}`);
      rest.push(...names(body));
      token = body.nextPageToken ?? null;
    }
    expect(rest).toEqual(['p35', 'p4', 'p5', 'p6', 'p7', 'p9']);
    expect(token).toBeNull();
  });

  // Firestore takes a control character in a document id, and a hand-made document's id is the caller's
  // (docs/api.md: named under `skipped`). A page ending on one handed out a token that the next request
  // refused (400 "not a page token"): every paged listing — the CLI, the typed client — stopped there.
  it('a page ending on a hand-made document whose id holds a control character: the next page follows it', async () => {
    await db.collection(Collections.proxies).doc('p2\n').set({ note: 'written by hand' });
    const first = await get('/v1/proxies?pageSize=3', ADMIN_TOKEN);
    expect(first.status).toBe(200);
    expect(names(first.body)).toEqual(['p1', 'p2']);
    expect(first.body.skipped).toMatchObject({ count: 1, names: ['p2\n'] });
    const rest: string[] = [];
    let token = first.body.nextPageToken ?? null;
    for (let pages = 0; token !== null && pages < 10; pages++) {
      const page = await get(`/v1/proxies?pageSize=3&pageToken=${token}`, ADMIN_TOKEN);
      expect(page.status).toBe(200);
      rest.push(...names(page.body));
      token = page.body.nextPageToken ?? null;
    }
    expect(rest).toEqual(['p3', 'p4', 'p5', 'p6', 'p7']);
  });

  it('a page reads its own proxies (and one more, to know a next page exists) and their lease states, not the fleet', async () => {
    await get('/v1/proxies?pageSize=1'); // the lease views are loaded: what follows is the page's own
    const first = await get('/v1/proxies?pageSize=3');
    reads.length = 0;
    const second = await get(`/v1/proxies?pageSize=3&pageToken=${first.body.nextPageToken}`);
    expect(names(second.body)).toEqual(['p4', 'p5', 'p6']);
    // One query of the proxies collection (the recorder calls a query without where() a scan: this one is
    // ordered, started after p3 and limited), returning the page's 3 and the one that says more follow.
    const proxyReads = reads.filter((r) => r.collection === Collections.proxies);
    expect(proxyReads).toEqual([{ collection: Collections.proxies, how: 'scan', docs: 4 }]);
    const stateReads = reads.filter((r) => r.collection === LEASE_COLLECTIONS.leaseState);
    expect(stateReads.reduce((n, r) => n + r.docs, 0)).toBeLessThanOrEqual(3);
  });
});

describe('the whole fleet, a page at a time, through the clients', () => {
  it('the typed client follows the pages: listProxies gets every proxy, proxyPages each page', async () => {
    const urls: string[] = [];
    const client = new LeaseClient({
      baseUrl: 'http://api.test',
      token: CRAWLER,
      fetch: (async (url: string, init: RequestInit) => {
        urls.push(url);
        return app.request(url, init);
      }) as typeof fetch,
    });
    const all = await client.listProxies({}, { pageSize: 3 });
    expect(all.proxies.map((p) => p.name)).toEqual(NAMES);
    expect(all.count).toBe(7);
    expect(urls).toHaveLength(3);
    const healthyEu: string[][] = [];
    for await (const page of client.proxyPages(
      { attributes: { region: 'eu' }, healthy: true },
      { pageSize: 2 },
    )) {
      healthyEu.push(page.proxies.map((p) => p.name));
    }
    expect(healthyEu).toEqual([['p1', 'p3'], ['p7']]);
    // Without options: 1,000 a page, the whole fleet in one request here.
    urls.length = 0;
    expect((await client.listProxies()).count).toBe(7);
    expect(urls).toEqual(['http://api.test/v1/proxies?pageSize=1000']);
  });

  it('`proxyplane proxies list` lists every page as one listing: the table and -o json', async () => {
    const requests: string[] = [];
    const server = serve({
      fetch: (req: Request) => {
        requests.push(new URL(req.url).search);
        return app.fetch(req);
      },
      port: 0,
      hostname: '127.0.0.1',
    });
    await new Promise<void>((r) => server.once('listening', () => r()));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const cli = cliInProcess({ dir, apiUrl: () => url, adminToken: ADMIN_TOKEN });
      const out = await cli(['proxies', 'list', '--page-size', '3', '-o', 'json']);
      expect(out, out.stderr).toMatchObject({ code: 0 });
      const listing = JSON.parse(out.stdout) as Page;
      expect(names(listing)).toEqual(NAMES);
      expect(listing.count).toBe(7);
      expect(listing).not.toHaveProperty('nextPageToken');
      expect(requests).toHaveLength(3);
      const table = await cli(['proxies', 'list', '--page-size', '2', '--attr', 'region=eu']);
      expect(table, table.stderr).toMatchObject({ code: 0 });
      const rows = table.stdout.trim().split('\n').slice(1);
      expect(rows.map((r) => r.split(/\s+/)[0])).toEqual(['p1', 'p3', 'p5', 'p7']);
      // A crawler's listing too (its own credential, the spec without cloud-init).
      const crawler = await cli(['proxies', 'list', '--page-size', '3', '-o', 'json'], {
        PROXYPLANE_ADMIN_TOKEN: '',
        PROXYPLANE_CRAWLER_TOKEN: CRAWLER,
      });
      expect(crawler, crawler.stderr).toMatchObject({ code: 0 });
      expect(JSON.parse(crawler.stdout)).toMatchObject({ count: 7, redacted: ['spec.cloudInit'] });
    } finally {
      await new Promise<void>((r) => server.close(() => r()));
    }
  });
});
