// Concurrent edits through the API never lose an update: each PATCH reads, merges and writes with a
// precondition on the version it read (Firestore lastUpdateTime, through the real adapter on the
// emulator), and a loser re-reads and retries. So every 200 is reflected in the final spec, the
// generation grows by exactly the number of 200s, and a 409 conflict (the bounded retries ran out) changed
// nothing.
import { Firestore } from '@google-cloud/firestore';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openAuthenticator } from '../../functions/api/src/auth/authenticator.js';
import { type ApiServer, startApiServer } from '../../functions/api/src/server.js';
import { FirestoreProxyStore } from '../../shared/src/adapters/firestore/proxy-store.js';
import { memoryLogger } from '../../shared/src/adapters/log/json-logger.js';
import { systemClock } from '../../shared/src/ports/clock.js';
import { aProxy } from '../../shared/src/testing/proxy-fixtures.js';
import { RecordingReconcilePublisher } from '../../shared/src/testing/recording-publisher.js';
import { testProjectId } from '../support/emulators.js';

const WRITERS = 6;

describe('concurrent PATCHes of one proxy', () => {
  const projectId = testProjectId('demo-apiconc');
  const db = new Firestore({ projectId });
  const store = new FirestoreProxyStore(db);
  const publisher = new RecordingReconcilePublisher();
  let api: ApiServer;

  beforeAll(async () => {
    await store.create(aProxy({ name: 'contended' }));
    api = await startApiServer({
      deps: {
        version: 't',
        store,
        publisher,
        clock: systemClock,
        auth: openAuthenticator(),
        log: memoryLogger(),
      },
    });
  });

  afterAll(async () => {
    await api?.close();
    await db.terminate();
  });

  it('lose no update: every 200 is in the final spec, and generation counts them', async () => {
    const results = await Promise.all(
      Array.from({ length: WRITERS }, async (_, i) => {
        const res = await fetch(`${api.url}/v1/proxies/contended/spec`, {
          method: 'PATCH',
          headers: { 'content-type': 'application/merge-patch+json' },
          body: JSON.stringify({ attributes: { [`writer-${i}`]: String(i) } }),
        });
        return { i, status: res.status, body: (await res.json()) as { error?: string } };
      }),
    );
    for (const r of results) {
      expect([200, 409]).toContain(r.status);
      if (r.status === 409) expect(r.body.error).toBe('conflict');
    }
    const won = results.filter((r) => r.status === 200).map((r) => r.i);
    expect(won.length).toBeGreaterThan(0);

    const final = (await store.get('contended'))?.proxy;
    expect(final?.spec.attributes).toEqual(Object.fromEntries(won.map((i) => [`writer-${i}`, String(i)])));
    expect(final?.generation).toBe(1 + won.length);
    expect(publisher.published).toHaveLength(won.length);
  });

  it('does not lose a status write either: an edit racing reconcile keeps both', async () => {
    const before = await store.get('contended');
    const edit = fetch(`${api.url}/v1/proxies/contended/spec`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/merge-patch+json' },
      body: JSON.stringify({ capacity: 9 }),
    });
    const status = store.writeStatus(
      'contended',
      { ...before!.proxy.status, phase: 'Provisioning', observedGeneration: before!.proxy.generation },
      before!.version,
    );
    const [res] = await Promise.all([edit, status]);
    expect(res.status).toBe(200);
    const after = (await store.get('contended'))?.proxy;
    expect(after?.spec.capacity).toBe(9);
    expect(after?.generation).toBe(before!.proxy.generation + 1);
    // Whichever landed first, the status write either landed or was refused as a conflict — never
    // half-applied over the edit; if it landed, it is still there.
    const outcome = await status;
    expect(['written', 'conflict']).toContain(outcome);
    if (outcome === 'written') expect(after?.status.phase).toBe('Provisioning');
    else expect(after?.status).toEqual(before!.proxy.status);
  });
});
