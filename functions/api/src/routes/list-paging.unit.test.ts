// GET /v1/proxies a page at a time (list-paging.ts), on the in-memory store: pages in name order, the
// token bound to the filters, every bad pageSize and pageToken a 400 naming it that reads nothing. The
// same on the Firestore emulator, with the typed client and the CLI: test/integration/api-list-paging.test.ts.
import { describe, expect, it } from 'vitest';
import { aProxy, managedSpec } from '../../../../shared/src/testing/proxy-fixtures.js';
import { harness } from '../testing/harness.js';
import {
  filtersTag,
  fitPage,
  MAX_LIST_PAGE_SIZE,
  MAX_PAGE_BYTES,
  pageTokenOf,
  readPageToken,
} from './list-paging.js';

const NAMES = ['p1', 'p2', 'p3', 'p4', 'p5', 'p6', 'p7'];

async function fleet() {
  const h = harness();
  for (const [i, name] of NAMES.entries()) {
    const region = i % 2 === 0 ? 'eu' : 'us'; // p1 p3 p5 p7 in eu
    await h.store.inner.create(
      aProxy({ name, spec: managedSpec({ attributes: { region } }), status: { phase: 'Ready' } }),
    );
  }
  return h;
}

type Page = { proxies: Array<{ name: string }>; count: number; nextPageToken?: string | null };

async function get(h: ReturnType<typeof harness>, path: string) {
  const res = await h.call('GET', path);
  return { status: res.status, body: (await res.json()) as Page & Record<string, unknown> };
}

/** Every page of `query` with `pageSize`, followed to the end. */
async function pages(h: ReturnType<typeof harness>, query: string, pageSize: number) {
  const out: Array<{ names: string[]; count: number; last: boolean }> = [];
  let token: string | null = null;
  do {
    const q = new URLSearchParams(query);
    q.set('pageSize', String(pageSize));
    if (token !== null) q.set('pageToken', token);
    const { status, body } = await get(h, `/v1/proxies?${q}`);
    expect(status).toBe(200);
    expect(body).toHaveProperty('nextPageToken');
    out.push({
      names: body.proxies.map((p) => p.name),
      count: body.count,
      last: body.nextPageToken === null,
    });
    token = body.nextPageToken ?? null;
  } while (token !== null && out.length < 20);
  return out;
}

describe('GET /v1/proxies paged', () => {
  it('pages in name order, pageSize at a time; count is the page’s, and the last page says null', async () => {
    const h = await fleet();
    expect(await pages(h, '', 3)).toEqual([
      { names: ['p1', 'p2', 'p3'], count: 3, last: false },
      { names: ['p4', 'p5', 'p6'], count: 3, last: false },
      { names: ['p7'], count: 1, last: true },
    ]);
    expect(await pages(h, '', MAX_LIST_PAGE_SIZE)).toEqual([{ names: NAMES, count: 7, last: true }]);
  });

  it('without pageSize and pageToken lists everything, as before paging, and says nothing of pages', async () => {
    const h = await fleet();
    const { status, body } = await get(h, '/v1/proxies');
    expect(status).toBe(200);
    expect(body.proxies.map((p) => p.name)).toEqual(NAMES);
    expect(body.count).toBe(7);
    expect(body).not.toHaveProperty('nextPageToken');
  });

  it('pages a filtered listing, a store filter (attr.) and one applied after reading (healthy) alike', async () => {
    const h = await fleet();
    expect(await pages(h, 'attr.region=eu', 3)).toEqual([
      { names: ['p1', 'p3', 'p5'], count: 3, last: false },
      { names: ['p7'], count: 1, last: true },
    ]);
    // No proxy here is healthy (none has a health check passing): each page reads its 3 and lists none,
    // and the token still moves past what was read, to the end.
    expect(await pages(h, 'healthy=true', 3)).toEqual([
      { names: [], count: 0, last: false },
      { names: [], count: 0, last: false },
      { names: [], count: 0, last: true },
    ]);
    expect((await pages(h, 'healthy=false&attr.region=us', 2)).flatMap((p) => p.names)).toEqual([
      'p2',
      'p4',
      'p6',
    ]);
  });

  it('a page token goes with its filters in any order, and pageSize may change from page to page', async () => {
    const h = await fleet();
    const first = await get(h, '/v1/proxies?attr.region=eu&phase=Ready&pageSize=2');
    expect(first.body.proxies.map((p) => p.name)).toEqual(['p1', 'p3']);
    const token = first.body.nextPageToken!;
    const second = await get(h, `/v1/proxies?pageToken=${token}&phase=Ready&attr.region=eu&pageSize=5`);
    expect(second.status).toBe(200);
    expect(second.body.proxies.map((p) => p.name)).toEqual(['p5', 'p7']);
    expect(second.body.nextPageToken).toBeNull();
    // A pageToken alone pages too, DEFAULT_LIST_PAGE_SIZE at a time.
    const alone = await get(h, `/v1/proxies?pageToken=${pageTokenOf('p5', filtersTag({ attributes: {} }))}`);
    expect(alone.body).toMatchObject({ count: 2, nextPageToken: null });
    expect(alone.body.proxies.map((p) => p.name)).toEqual(['p6', 'p7']);
  });

  const token = (text: string) => Buffer.from(text, 'utf8').toString('base64url');
  const unfiltered = filtersTag({ attributes: {} });
  it.each([
    ['pageSize=0', 'pageSize'],
    ['pageSize=-1', 'pageSize'],
    ['pageSize=1.5', 'pageSize'],
    ['pageSize=abc', 'pageSize'],
    ['pageSize=', 'pageSize'],
    ['pageSize=%201', 'pageSize'],
    ['pageSize=0x10', 'pageSize'],
    ['pageSize=1e2', 'pageSize'],
    [`pageSize=${MAX_LIST_PAGE_SIZE + 1}`, 'pageSize'],
    ['pageSize=99999999999999999999', 'pageSize'],
    ['pageSize=3&pageSize=4', 'pageSize'],
    ['pageToken=', 'pageToken'],
    ['pageToken=***', 'pageToken'],
    ['pageToken=zzzzzzzz', 'pageToken'],
    [`pageToken=${token('p3')}`, 'pageToken'],
    [`pageToken=${token(`${unfiltered}.`)}`, 'pageToken'],
    [`pageToken=${token(`${unfiltered}.a/b`)}`, 'pageToken'],
    [`pageToken=${token(`${unfiltered}...`)}`, 'pageToken'],
    [`pageToken=${token(`${unfiltered}.p3\u0000`)}`, 'pageToken'],
    [`pageToken=${token(`${unfiltered}.__x__`)}`, 'pageToken'],
    [`pageToken=${token(`${unfiltered}.${'a'.repeat(1501)}`)}`, 'pageToken'],
    // A token of the unfiltered listing, sent with a filter: another listing's page, refused.
    [`pageToken=${pageTokenOf('p3', unfiltered)}&attr.region=eu`, 'pageToken'],
    [`pageToken=${pageTokenOf('p3', unfiltered)}&healthy=true`, 'pageToken'],
    [`pageToken=${pageTokenOf('p3', filtersTag({ attributes: { region: 'eu' } }))}`, 'pageToken'],
  ])('?%s is 400 invalid_request naming %s; nothing is read or changed', async (query, name) => {
    const h = await fleet();
    const before = await h.store.snapshot();
    let read = false;
    for (const op of ['listPage', 'listAll', 'list'] as const) {
      h.store.interceptNext(op, () => {
        read = true;
      });
    }
    const { status, body } = await get(h, `/v1/proxies?${query}`);
    expect(status).toBe(400);
    expect(body).toMatchObject({ error: 'invalid_request' });
    expect((body.issues as Array<{ path: string }>).map((i) => i.path)).toEqual([name]);
    expect(read).toBe(false);
    expect(await h.store.snapshot()).toEqual(before);
    expect(h.store.writeCalls).toEqual([]);
  });

  it('the refusal of a bad pageSize says the bounds', async () => {
    const h = await fleet();
    const { body } = await get(h, '/v1/proxies?pageSize=0');
    expect(body.issues).toEqual([
      expect.objectContaining({
        path: 'pageSize',
        message: `pageSize must be an integer in 1–${MAX_LIST_PAGE_SIZE}`,
      }),
    ]);
  });

  it('a page reads only its own proxies: listPage after the cursor, never the whole listing', async () => {
    const h = await fleet();
    const asked: unknown[] = [];
    const inner = h.store.inner;
    const listPage = inner.listPage.bind(inner);
    inner.listPage = async (filter, page) => {
      asked.push(page);
      return listPage(filter, page);
    };
    inner.listAll = async () => {
      throw new Error('a paged listing read the whole fleet');
    };
    const all = await pages(h, '', 3);
    expect(all.flatMap((p) => p.names)).toEqual(NAMES);
    expect(asked).toEqual([
      { after: null, size: 3 },
      { after: 'p3', size: 3 },
      { after: 'p6', size: 3 },
    ]);
  });
});

describe('a page too large for one answer', () => {
  it('fitPage keeps the first proxies within the bytes, one at least, and says after which the next starts', () => {
    const p = (name: string) => ({ name, pad: 'x'.repeat(90) }); // ~110 bytes of JSON each
    const five = ['a', 'b', 'c', 'd', 'e'].map(p);
    expect(fitPage(five, 10_000)).toEqual({ kept: five, cutAfter: null });
    const cut = fitPage(five, 250);
    expect(cut).toEqual({ kept: five.slice(0, 2), cutAfter: 'b' });
    expect(fitPage(five, 10)).toEqual({ kept: five.slice(0, 1), cutAfter: 'a' });
    expect(fitPage([], 10)).toEqual({ kept: [], cutAfter: null });
  });

  it(`ends an admin page of proxies with 32 KiB of inline cloud-init before ${MAX_PAGE_BYTES / 1024 / 1024} MiB; the next pages list the rest, each once`, async () => {
    const h = harness();
    const names = Array.from({ length: 600 }, (_, i) => `big-${String(i).padStart(3, '0')}`);
    const cloudInit = { inline: `#!/bin/sh\n${'echo proxyplane\n'.repeat(2_000)}`.slice(0, 32 * 1024) };
    for (const name of names) {
      await h.store.inner.create(aProxy({ name, spec: managedSpec({ cloudInit }) }));
    }
    const seen: string[] = [];
    const sizes: number[] = [];
    let token: string | null = null;
    do {
      const res = await h.call('GET', `/v1/proxies?pageSize=1000${token ? `&pageToken=${token}` : ''}`);
      expect(res.status).toBe(200);
      const text = await res.text();
      sizes.push(text.length);
      const body = JSON.parse(text) as Page;
      expect(body.count).toBe(body.proxies.length);
      seen.push(...body.proxies.map((x) => x.name));
      token = body.nextPageToken ?? null;
    } while (token !== null && sizes.length < 10);
    expect(seen).toEqual(names);
    expect(sizes.length).toBeGreaterThan(1);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(MAX_PAGE_BYTES + 1024);
  });
});

describe('page tokens', () => {
  it('round-trip the last name and the filters’ tag; the tag ignores the order of attributes', () => {
    const tag = filtersTag({ phase: 'Ready', attributes: { b: '2', a: '1' } });
    expect(tag).toBe(filtersTag({ phase: 'Ready', attributes: { a: '1', b: '2' } }));
    expect(tag).not.toBe(filtersTag({ phase: 'Ready', attributes: { a: '1', b: '3' } }));
    expect(tag).not.toBe(filtersTag({ attributes: { a: '1', b: '2' } }));
    expect(filtersTag({ healthy: 'true', attributes: {} })).not.toBe(
      filtersTag({ leasable: 'true', attributes: {} }),
    );
    const t = pageTokenOf('p3', tag);
    expect(t).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(readPageToken(t)).toEqual({ tag, after: 'p3' });
    // A name with a dot in it still reads back whole: the tag has a fixed length.
    expect(readPageToken(pageTokenOf('a.b', tag))).toEqual({ tag, after: 'a.b' });
    // A hand-made document's id reads back, control characters (but NUL) and all.
    for (const id of ['bad\nid', 'tab\there', 'cr\r', 'del\u007f', 'Edge 1'])
      expect(readPageToken(pageTokenOf(id, tag))).toEqual({ tag, after: id });
  });
});
