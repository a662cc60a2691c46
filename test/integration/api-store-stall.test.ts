// The API's proxy routes against a Firestore that takes a call and never answers it (the emulator, some
// calls held up in the client): every route answers the documented `503 unavailable` with Retry-After at
// the store's call deadline, instead of waiting out the client's 300 s per attempt into Cloud Run's
// plain-text 504; and a write given up at the deadline is an unknown outcome — when it lands later,
// nothing was published for it, and the caller's retry finds it made (not made twice).

import {
  type CollectionReference,
  type DocumentReference,
  Firestore,
  type Query,
} from '@google-cloud/firestore';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openAuthenticator } from '../../functions/api/src/auth/authenticator.js';
import { type ApiServer, startApiServer } from '../../functions/api/src/server.js';
import { FirestoreProxyStore } from '../../shared/src/adapters/firestore/proxy-store.js';
import { memoryLogger } from '../../shared/src/adapters/log/json-logger.js';
import { systemClock } from '../../shared/src/ports/clock.js';
import { aProxy, externalSpec } from '../../shared/src/testing/proxy-fixtures.js';
import { RecordingReconcilePublisher } from '../../shared/src/testing/recording-publisher.js';
import { releaseProject, testProjectId } from '../support/emulators.js';
import { heldUpFirestore } from '../support/held-up-firestore.js';
import { pollUntil } from '../support/poll.js';
import { timedCall } from '../support/timed-call.js';

const projectId = testProjectId();
const db = new Firestore({ projectId });
const plain = new FirestoreProxyStore(db);

/** The deadline the tests inject (the API's own is API_STORE_CALL_DEADLINE_MS, wiring.ts). */
const DEADLINE_MS = 1_000;
/** How long a request may take past the deadline: the mark's check after a given-up write, and slack. */
const ANSWER_WITHIN_MS = 3 * DEADLINE_MS + 2_000;

/**
 * `db` with writes of the documents in `writes` (`ref.create`, `ref.update`: each its own commit, not
 * db.batch()'s), and every unfiltered read of a whole collection (`listAll`'s query), held until `gate`.
 */
function heldWritesAndLists(
  target: Firestore,
  held: { writes?: string[]; lists?: boolean },
  gate: Promise<void>,
): Firestore {
  const writes = new Set(held.writes ?? []);
  const wrap = <T extends object>(t: T, own: (prop: string | symbol) => unknown): T =>
    new Proxy(t, {
      get(o, prop) {
        const v = own(prop) ?? Reflect.get(o, prop, o);
        return typeof v === 'function' && own(prop) === undefined ? v.bind(o) : v;
      },
    });
  const doc = (ref: DocumentReference): DocumentReference =>
    writes.has(ref.path)
      ? wrap(ref, (prop) =>
          prop === 'create' || prop === 'update'
            ? async (...args: unknown[]) => {
                await gate;
                return (Reflect.get(ref, prop) as (...a: unknown[]) => Promise<unknown>).apply(ref, args);
              }
            : undefined,
        )
      : ref;
  const collection = (ref: CollectionReference): CollectionReference =>
    wrap(ref, (prop) => {
      if (prop === 'doc') return (id: string) => doc(ref.doc(id));
      if (prop === 'get' && held.lists)
        return async () => {
          await gate;
          return (ref as Query).get();
        };
      return undefined;
    });
  return wrap(target, (prop) =>
    prop === 'collection' ? (path: string) => collection(target.collection(path)) : undefined,
  );
}

const never = new Promise<void>(() => {});
let releaseWrites: () => void = () => {};
const writesGate = new Promise<void>((resolve) => {
  releaseWrites = resolve;
});

const servers: ApiServer[] = [];
async function startApi(firestore: Firestore) {
  const publisher = new RecordingReconcilePublisher();
  const api = await startApiServer({
    deps: {
      version: 'test',
      store: new FirestoreProxyStore(firestore, { callDeadlineMs: DEADLINE_MS }),
      publisher,
      clock: systemClock,
      auth: openAuthenticator(),
      log: memoryLogger(),
    },
  });
  servers.push(api);
  return { api, publisher };
}

// Without a deadline the request waits out the client's 300 s: the timeout says so, as a failure.
const call = (api: ApiServer, method: string, path: string, body?: unknown) =>
  timedCall(`${api.url}${path}`, method, { body, timeoutMs: ANSWER_WITHIN_MS });

const newSpec = externalSpec({ endpoint: { host: '203.0.113.9', port: 3128 } });

beforeAll(async () => {
  await plain.create(aProxy({ name: 'stalled', spec: externalSpec() }));
  await plain.create(aProxy({ name: 'slow-write', spec: externalSpec() }));
});

afterAll(async () => {
  releaseWrites();
  await Promise.all(servers.map((s) => s.close()));
  await releaseProject(projectId);
  await db.terminate();
});

describe('a read of proxies/stalled that Firestore never answers', () => {
  let api: ApiServer;
  let publisher: RecordingReconcilePublisher;
  beforeAll(async () => {
    ({ api, publisher } = await startApi(heldUpFirestore(db, { reads: ['proxies/stalled'] }, never)));
  });

  it.each([
    ['GET', '/v1/proxies/stalled', undefined],
    ['PUT', '/v1/proxies/stalled/spec', newSpec],
    ['PATCH', '/v1/proxies/stalled/spec', { attributes: { tier: 'b' } }],
    ['DELETE', '/v1/proxies/stalled', undefined],
    ['POST', '/v1/proxies/stalled/reconcile', undefined],
  ])('%s %s: 503 unavailable with Retry-After at the deadline', async (method, path, body) => {
    const res = await call(api, method, path, body);
    expect(res).toMatchObject({ status: 503, retryAfter: '5', body: { error: 'unavailable' } });
    expect(res.ms).toBeGreaterThanOrEqual(DEADLINE_MS - 50);
    expect(publisher.published).toEqual([]);
  });

  it('other proxies are served meanwhile', async () => {
    expect((await call(api, 'GET', '/v1/proxies/slow-write')).status).toBe(200);
  });
});

it('GET /v1/proxies whose query Firestore never answers: 503 unavailable with Retry-After', async () => {
  const { api } = await startApi(heldWritesAndLists(db, { lists: true }, never));
  const res = await call(api, 'GET', '/v1/proxies');
  expect(res).toMatchObject({ status: 503, retryAfter: '5', body: { error: 'unavailable' } });
});

describe('writes given up at the deadline, landing later', () => {
  let api: ApiServer;
  let publisher: RecordingReconcilePublisher;
  beforeAll(async () => {
    ({ api, publisher } = await startApi(
      heldWritesAndLists(db, { writes: ['proxies/slow-write', 'proxies/late-create'] }, writesGate),
    ));
  });

  it('an unknown outcome: 503, nothing published when they land, a retry finds them made', async () => {
    const put = await call(api, 'PUT', '/v1/proxies/slow-write/spec', newSpec);
    expect(put).toMatchObject({ status: 503, retryAfter: '5', body: { error: 'unavailable' } });
    const post = await call(api, 'POST', '/v1/proxies', { name: 'late-create', spec: externalSpec() });
    expect(post).toMatchObject({ status: 503, retryAfter: '5', body: { error: 'unavailable' } });

    releaseWrites();
    await pollUntil(
      () => plain.get('slow-write'),
      (s) => s?.proxy.generation === 2,
      10_000,
      'the PUT to land',
    );
    await pollUntil(
      () => plain.get('late-create'),
      (s) => s !== null,
      10_000,
      'the POST to land',
    );
    await new Promise((r) => setTimeout(r, 200));
    // The handlers ended at the deadline: nothing says `created` or `spec-changed` for what they were
    // told had failed.
    expect(publisher.published).toEqual([]);

    // The retried PUT finds its spec there: no second write, the generation kept; published now, for
    // reconcile has not seen it.
    const again = await call(api, 'PUT', '/v1/proxies/slow-write/spec', newSpec);
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ generation: 2, spec: { endpoint: { host: '203.0.113.9' } } });
    expect(publisher.published.map((p) => [p.proxy, p.reason])).toEqual([['slow-write', 'spec-changed']]);
  });
});
