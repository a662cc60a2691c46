// The lease service's proxy catalog on the Firestore emulator: it listens only while requests come — not
// at start, from the first ready() on, and no longer once idle — and a later request loads a fresh view.
import { Firestore } from '@google-cloud/firestore';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { FirestoreProxyCatalog } from '../../shared/src/adapters/firestore/proxy-cache.js';
import { memoryLogger } from '../../shared/src/adapters/log/json-logger.js';
import { testProjectId } from '../support/emulators.js';
import { proxy, writeFleet } from '../support/leases.js';

const db = new Firestore({ projectId: testProjectId() });
const log = memoryLogger();
let catalog: FirestoreProxyCatalog;

beforeAll(async () => {
  await writeFleet(db, [proxy('cat-a'), proxy('cat-b')]);
  catalog = new FirestoreProxyCatalog(db, { log, idleMs: 300 }).start();
});
afterAll(async () => {
  catalog.stop();
  await db.terminate();
});

it('listens from the first request until idle, then loads a fresh view on the next', async () => {
  expect(catalog.listening).toBe(false);
  expect(catalog.list()).toEqual([]);

  await catalog.ready(10_000);
  expect(catalog.listening).toBe(true);
  expect(catalog.list().map((p) => p.name)).toEqual(['cat-a', 'cat-b']);

  // Idle past idleMs (bounded wait): the listener stops and the view is dropped.
  for (let i = 0; i < 50 && catalog.listening; i++) await new Promise((r) => setTimeout(r, 100));
  expect(catalog.listening).toBe(false);
  expect(catalog.list()).toEqual([]);
  expect(log.lines.some((l) => String(l.message).includes('proxies listener stops'))).toBe(true);

  // A change made while nobody listened is in the next view.
  await writeFleet(db, [proxy('cat-c')]);
  await catalog.ready(10_000);
  expect(catalog.list().map((p) => p.name)).toEqual(['cat-a', 'cat-b', 'cat-c']);
});

it('refuses to listen once stopped', async () => {
  const stopped = new FirestoreProxyCatalog(db, { log });
  await expect(stopped.ready(1_000)).rejects.toThrow('not started');
});
