// watchProxies over a fake collection: the first snapshot is bounded (the client retries a failing listen
// for minutes before it reports, past the probe's timeout), each snapshot decodes only the documents it
// changed, and an error after the first stops the view. The real listener runs in the contract suite
// (test/integration/proxy-store.test.ts).
import type { CollectionReference, DocumentSnapshot } from '@google-cloud/firestore';
import { describe, expect, it } from 'vitest';
import type { ProxyResource } from '../../domain/proxy.js';
import { InvalidStoredProxy, StoreError } from '../../ports/proxy-store.js';
import { aProxy } from '../../testing/proxy-fixtures.js';
import { watchProxies } from './proxy-watch.js';

type Change = { type: 'added' | 'modified' | 'removed'; doc: DocumentSnapshot };

function fakeCollection() {
  const listener: { next?: (s: { docChanges(): Change[] }) => void; error?: (e: unknown) => void } = {};
  let unsubscribed = 0;
  const collection = {
    onSnapshot(next: never, error: never) {
      listener.next = next;
      listener.error = error;
      return () => void unsubscribed++;
    },
  } as unknown as CollectionReference;
  const doc = (id: string) => ({ id }) as DocumentSnapshot;
  const send = (...changes: Array<[Change['type'], string]>) =>
    listener.next!({ docChanges: () => changes.map(([type, id]) => ({ type, doc: doc(id) })) });
  return { collection, send, fail: (e: unknown) => listener.error!(e), unsubscribed: () => unsubscribed };
}

const decoded: string[] = [];
const parse = (d: DocumentSnapshot): ProxyResource => {
  decoded.push(d.id);
  if (d.id.startsWith('bad'))
    throw new InvalidStoredProxy({
      name: d.id,
      version: '1',
      issues: [{ path: 'spec', code: 'x', message: 'x' }],
      uid: null,
      generation: null,
      deletionRequestedAt: null,
    });
  return aProxy({ name: d.id });
};
const asError = (e: unknown) => (e instanceof Error ? e : new Error(String(e)));

describe('watchProxies', () => {
  it('gives up on a first snapshot that does not come in time, and stops listening', async () => {
    const f = fakeCollection();
    const err = await watchProxies(f.collection, parse, asError, 20).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StoreError);
    expect(err).toHaveProperty('kind', 'unavailable');
    expect(f.unsubscribed()).toBe(1);
  });

  it('a first snapshot failing rejects with the store failure', async () => {
    const f = fakeCollection();
    const watching = watchProxies(f.collection, parse, () => new StoreError('unavailable', 'listen'), 1000);
    f.fail(Object.assign(new Error('denied'), { code: 7 }));
    await expect(watching).rejects.toThrow('listen');
  });

  it('decodes only what each snapshot changed, lists in name order, names the skipped', async () => {
    const f = fakeCollection();
    decoded.length = 0;
    const watching = watchProxies(f.collection, parse, asError, 1000);
    f.send(['added', 'p2'], ['added', 'p1'], ['added', 'bad-1']);
    const view = await watching;
    expect(view.current().proxies.map((p) => p.name)).toEqual(['p1', 'p2']);
    expect(view.current().skipped.map((s) => s.name)).toEqual(['bad-1']);
    f.send(['modified', 'p2'], ['removed', 'p1'], ['added', 'p0']);
    expect(view.current().proxies.map((p) => p.name)).toEqual(['p0', 'p2']);
    expect(decoded).toEqual(['p2', 'p1', 'bad-1', 'p2', 'p0']);
    expect(view.failure()).toBeNull();
    view.stop();
    expect(f.unsubscribed()).toBe(1);
  });

  it('an error after the first snapshot stops the view, which keeps what it had', async () => {
    const f = fakeCollection();
    const watching = watchProxies(f.collection, parse, asError, 1000);
    f.send(['added', 'p1']);
    const view = await watching;
    f.fail(new Error('listen gone'));
    expect(view.failure()?.message).toBe('listen gone');
    expect(view.current().proxies.map((p) => p.name)).toEqual(['p1']);
    expect(f.unsubscribed()).toBe(1);
  });
});
