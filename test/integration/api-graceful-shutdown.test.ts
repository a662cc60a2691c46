// SIGTERM (Cloud Run retiring an instance, `npm start` stopping) lets the requests in flight finish: the
// API used to drop every connection at once, requests in flight included, so a crawler got a reset
// connection instead of its answer — and when its acquire had already been granted in Firestore, the slot
// stayed taken for the lease's whole TTL by a lease nobody could renew or release. The real entry point
// (main.ts) as its own process.
import { once } from 'node:events';
import net from 'node:net';
import { Firestore } from '@google-cloud/firestore';
import { afterAll, describe, expect, it } from 'vitest';
import { testProjectId } from '../support/emulators.js';
import { type ApiProcess, proxy, startApiProcess, storedLeases, writeFleet } from '../support/leases.js';
import { pollUntil } from '../support/poll.js';

const projectId = testProjectId();
const db = new Firestore({ projectId });
const TOKEN = 'shutdown-test-token-0123';
const running: ApiProcess[] = [];

afterAll(async () => {
  await Promise.all(running.map((s) => s.stop()));
  await db.terminate();
});

/** Whether a connection to `port` is refused (nothing listens there any more). */
const refused = (port: number) =>
  new Promise<boolean>((resolve) => {
    const probe = net.connect(port, '127.0.0.1');
    probe.once('connect', () => {
      probe.destroy();
      resolve(false);
    });
    probe.once('error', () => resolve(true));
  });

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('API shutdown', () => {
  it('answers an acquire in flight when SIGTERM arrives, then exits', { timeout: 120_000 }, async () => {
    await writeFleet(db, [proxy('solo', { capacity: 1 })]);
    const api = await startApiProcess({ GOOGLE_CLOUD_PROJECT: projectId, DISCOVERY_TOKENS: `t:${TOKEN}` });
    running.push(api);
    const port = Number(new URL(api.url).port);

    // A request the server has started (it answered 100-continue) but whose body is not all there yet.
    const socket = net.connect(port, '127.0.0.1');
    await once(socket, 'connect');
    let received = '';
    socket.on('data', (d: Buffer) => {
      received += d.toString();
    });
    socket.on('error', () => {}); // the old shutdown reset the connection under the write below
    const closed = once(socket, 'close');
    const body = JSON.stringify({ ttlSeconds: 600 });
    socket.write(
      `POST /v1/leases HTTP/1.1\r\nHost: api\r\nAuthorization: Bearer ${TOKEN}\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${body.length}\r\nExpect: 100-continue\r\n\r\n`,
    );
    await pollUntil(
      () => received,
      (r) => r.includes('100 Continue'),
      30_000,
      'the 100-continue',
      20,
    );

    process.kill(-api.pid, 'SIGTERM');
    await pollUntil(
      () => refused(port),
      Boolean,
      30_000,
      'the API to stop listening (its shutdown began)',
      20,
    );
    socket.write(body);
    await closed; // the server closes the connection once it has answered

    const response = received.slice(received.indexOf('\r\n\r\n') + 4);
    expect(response).toMatch(/^HTTP\/1\.1 201 /);
    expect(response.toLowerCase()).toContain('connection: close');
    const grant = JSON.parse(response.slice(response.indexOf('\r\n\r\n') + 4));
    const stored = await storedLeases(db);
    expect(stored.map((l) => l.id)).toEqual([grant.leaseId]);
    await pollUntil(
      () => alive(api.pid),
      (a) => !a,
      30_000,
      'the API process to exit once it has answered',
    );
  });
});
