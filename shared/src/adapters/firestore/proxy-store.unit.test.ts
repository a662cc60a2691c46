// How FirestoreProxyStore classifies a failing Firestore, on a stub client: what a retry may fix is
// StoreError('unavailable') (the API answers 503 + Retry-After), anything else propagates (500, a bug);
// and a call that never answers is given up at the store's deadline, when it has one. What the emulator
// does with held calls and late writes: test/integration/api-store-stall.test.ts.
import type { Firestore } from '@google-cloud/firestore';
import { describe, expect, it } from 'vitest';
import { StoreError } from '../../ports/proxy-store.js';
import { FirestoreProxyStore } from './proxy-store.js';

/** A client whose document reads answer `docGet`, and whose queries `queryGet`. */
function stubFirestore(docGet: () => Promise<unknown>, queryGet = docGet): Firestore {
  const query: Record<string, unknown> = { get: queryGet };
  for (const chained of ['where', 'orderBy', 'limit', 'startAfter', 'select']) query[chained] = () => query;
  const collection = { ...query, doc: () => ({ get: docGet }) };
  return { collection: () => collection } as unknown as Firestore;
}

const never = () => new Promise<never>(() => {});

const calls: Array<[string, (s: FirestoreProxyStore) => Promise<unknown>]> = [
  ['get', (s) => s.get('p1')],
  ['listAll', (s) => s.listAll()],
  ['listPage', (s) => s.listPage({}, { after: 'p0', size: 10 })],
];

describe('FirestoreProxyStore failures', () => {
  // 16: an access token expired or not refreshed in time; 2: grpc-js's "Getting metadata from plugin
  // failed" (the metadata server's token fetch); 1: a call cut by the client. All answered 500 before.
  describe.each([
    [1, 'CANCELLED'],
    [2, 'UNKNOWN'],
    [16, 'UNAUTHENTICATED'],
    [14, 'UNAVAILABLE'],
  ])('gRPC %i (%s)', (code) => {
    it.each(calls)('%s: StoreError unavailable, the client error its cause', async (_, call) => {
      const failure = Object.assign(new Error(`${code} failed`), { code });
      const store = new FirestoreProxyStore(stubFirestore(() => Promise.reject(failure)));
      const err = await call(store).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(StoreError);
      expect((err as StoreError).kind).toBe('unavailable');
      expect((err as StoreError).cause).toBe(failure);
    });
  });

  // The code alone does not say why; recover() logs the StoreError's message, not its cause's.
  it.each(calls)('%s: the StoreError message carries the client error message, clipped', async (_, call) => {
    const text =
      '16 UNAUTHENTICATED: Getting metadata from plugin failed with error: Could not refresh access token';
    const failure = Object.assign(new Error(`${text}\n${'x'.repeat(1_000)}`), { code: 16 });
    const store = new FirestoreProxyStore(stubFirestore(() => Promise.reject(failure)));
    const err = (await call(store).catch((e: unknown) => e)) as StoreError;
    expect(err).toBeInstanceOf(StoreError);
    expect(err.message).toContain(`Firestore code 16: ${text}`);
    expect(err.message.length).toBeLessThan(400);
  });

  it.each([
    [3, 'INVALID_ARGUMENT'],
    [7, 'PERMISSION_DENIED'],
  ])('gRPC %i (%s) is no transient: it propagates as it came', async (code) => {
    const failure = Object.assign(new Error(`${code} failed`), { code });
    const store = new FirestoreProxyStore(stubFirestore(() => Promise.reject(failure)));
    await expect(store.get('p1')).rejects.toBe(failure);
  });

  it.each(calls)('%s never answered: StoreError unavailable at the call deadline', async (_, call) => {
    const store = new FirestoreProxyStore(stubFirestore(never), { callDeadlineMs: 20 });
    const started = performance.now();
    const err = await call(store).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StoreError);
    expect((err as StoreError).kind).toBe('unavailable');
    expect((err as Error).message).toMatch(/no answer from Firestore within 20 ms/);
    expect(performance.now() - started).toBeLessThan(2_000);
  });

  // The whole collection streams longer than one document or page: listAll has a bound of its own.
  it('listAll is given up at listAllDeadlineMs, get and listPage at callDeadlineMs', async () => {
    let answer: (v: { docs: []; size: 0 }) => void = () => {};
    const late = () =>
      new Promise<{ docs: []; size: 0 }>((resolve) => {
        answer = resolve;
      });
    const store = new FirestoreProxyStore(stubFirestore(late), {
      callDeadlineMs: 20,
      listAllDeadlineMs: 2_000,
    });
    for (const call of [() => store.get('p1'), () => store.listPage({}, { after: null, size: 10 })]) {
      const err = await call().catch((e: unknown) => e);
      expect((err as Error).message).toMatch(/within 20 ms/);
    }
    const listing = store.listAll();
    await new Promise((r) => setTimeout(r, 100));
    answer({ docs: [], size: 0 });
    await expect(listing).resolves.toMatchObject({ proxies: [] });

    const stalled = new FirestoreProxyStore(stubFirestore(never), {
      callDeadlineMs: 20,
      listAllDeadlineMs: 60,
    });
    expect(((await stalled.listAll().catch((e: unknown) => e)) as Error).message).toMatch(/within 60 ms/);
  });
});
