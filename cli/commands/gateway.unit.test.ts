// `gateway workers --all` follows the API's pages; a page token that does not advance (an API bug, or
// versions that disagree) would have looped forever against a rate-limited admin route.
import { describe, expect, it } from 'vitest';
import { runCli } from '../run.js';
import { cliDeps, recordingIo } from '../testing.js';

const worker = (workerId: string) => ({
  workerId,
  zone: 'europe-west1-b',
  state: 'ACTIVE',
  owns: 0,
  snapshot: null,
  ackedVersion: null,
  reportAgeSeconds: null,
});

async function listAll(pages: unknown[]) {
  const io = recordingIo();
  const urls: string[] = [];
  const fetch = (async (url: string | URL | Request) => {
    urls.push(String(url));
    const page = pages.shift() ?? { error: 'internal', message: 'no more pages' };
    return new Response(JSON.stringify(page), { status: 'error' in (page as object) ? 500 : 200 });
  }) as typeof globalThis.fetch;
  const exit = await runCli(
    ['gateway', 'workers', '--all', '-o', 'json', '--api', 'http://127.0.0.1:9'],
    cliDeps(io, fetch),
  );
  return { exit, urls, out: io.outLines.join('\n'), err: io.errLines };
}

describe('gateway workers --all', () => {
  it('follows nextPageToken to the last page', async () => {
    const { exit, urls, out } = await listAll([
      { epoch: 3, workers: [worker('gw-1')], nextPageToken: 'gw-1' },
      { epoch: 3, workers: [worker('gw-2')], nextPageToken: null },
    ]);
    expect(exit).toBe(0);
    expect(urls.map((u) => new URL(u).searchParams.get('pageToken'))).toEqual([null, 'gw-1']);
    expect(JSON.parse(out).workers.map((w: { workerId: string }) => w.workerId)).toEqual(['gw-1', 'gw-2']);
  });

  it('stops at a next page token that does not advance: exit 1, bad_response', async () => {
    const { exit, urls, err, out } = await listAll([
      { epoch: 3, workers: [worker('gw-1')], nextPageToken: 'gw-1' },
      { epoch: 3, workers: [worker('gw-2')], nextPageToken: 'gw-1' },
      { epoch: 3, workers: [worker('gw-3')], nextPageToken: 'gw-1' },
    ]);
    expect({ exit, calls: urls.length, out }).toEqual({ exit: 1, calls: 2, out: '' });
    expect(err[0]).toBe(
      'error: bad_response — GET /v1/gateway/workers answered a page token it was already sent as the next one',
    );
  });

  // Only a token repeated on the very next page was caught: A → B → A → B … collected pages for ever.
  it('stops at a next page token sent before, not just the last: A, B, A → exit 1 bad_response after 3 calls', async () => {
    const cycle = (n: number) => ({
      epoch: 3,
      workers: [worker(`gw-${n}`)],
      nextPageToken: n % 2 ? 'A' : 'B',
    });
    const { exit, urls, err, out } = await listAll([1, 2, 3, 4, 5, 6, 7, 8].map(cycle));
    expect({ exit, calls: urls.length, out }).toEqual({ exit: 1, calls: 3, out: '' });
    expect(urls.map((u) => new URL(u).searchParams.get('pageToken'))).toEqual([null, 'A', 'B']);
    expect(err[0]).toBe(
      'error: bad_response — GET /v1/gateway/workers answered a page token it was already sent as the next one',
    );
  });
});
