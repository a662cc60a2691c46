// The local scheduler against the Pub/Sub emulator: a fired job publishes exactly the table's Pub/Sub
// target (data JSON + attributes) to the table's topic, and a paused job publishes nothing, neither
// when fired nor from the timed loop.
import type { Message, Subscription } from '@google-cloud/pubsub';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadScheduleTable } from '../../shared/src/config/topology.js';
import { releaseProject, testProjectId } from '../support/emulators.js';
import { startTestPlane, type TestPlane } from '../support/local-plane.js';

const table = loadScheduleTable();
const jobIds = Object.keys(table.jobs);

describe('local scheduler', () => {
  const projectId = testProjectId();
  let plane: TestPlane;
  const received = new Map<string, Message[]>(); // topic → messages
  const subs: Subscription[] = [];

  beforeAll(async () => {
    plane = await startTestPlane({ projectId, scheduler: { speed: 10 } });
    // A pull subscription per scheduled topic, to see exactly what was published.
    for (const topic of new Set(Object.values(table.jobs).map((j) => j.topic))) {
      const [sub] = await plane.pubsub.topic(topic).createSubscription(`observe-${topic}`);
      received.set(topic, []);
      sub.on('message', (m: Message) => {
        m.ack();
        received.get(topic)!.push(m);
      });
      subs.push(sub);
    }
  });
  afterAll(async () => {
    await Promise.all(subs.map((s) => s.close()));
    await plane?.stop();
    await releaseProject(projectId);
  });

  /** Waits for at least `n` messages on `topic`; throws at the deadline. */
  const waitFor = async (topic: string, n: number, timeoutMs = 10_000) => {
    const deadline = Date.now() + timeoutMs;
    while ((received.get(topic)?.length ?? 0) < n) {
      if (Date.now() > deadline)
        throw new Error(`timed out after ${timeoutMs} ms waiting for ${n} messages on ${topic}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    return received.get(topic) ?? [];
  };

  it.each(jobIds)('fire(%s) publishes the table payload to the table topic', async (id) => {
    const job = table.jobs[id]!;
    const before = received.get(job.topic)!.length;
    const messageId = await plane.scheduler!.fire(id);
    const msgs = await waitFor(job.topic, before + 1);
    const msg = msgs.find((m) => m.id === messageId);
    expect(msg, `message ${messageId} on ${job.topic}`).toBeDefined();
    expect(JSON.parse(msg!.data.toString('utf8'))).toEqual(job.data);
    expect(msg!.data.length).toBeGreaterThan(0);
    expect(msg!.attributes).toEqual({});
    expect(plane.scheduler!.get(id)).toMatchObject({ state: 'ENABLED', lastStatus: { code: 0 } });
    expect(plane.scheduler!.get(id).lastAttemptTime).toBeInstanceOf(Date);
  });

  it('a paused job does not fire, by hand or on its schedule, and fires again once resumed', async () => {
    const id = jobIds[0]!;
    const { topic } = table.jobs[id]!;
    const scheduler = plane.scheduler!;
    scheduler.pause(id);
    const before = received.get(topic)!.length;
    await expect(scheduler.fire(id)).rejects.toMatchObject({ kind: 'failed_precondition' });

    // The loop runs at speed 10 (every job several times a second): only the paused one stays silent.
    const other = table.jobs[jobIds.find((j) => table.jobs[j]!.topic !== topic)!]!.topic;
    const otherBefore = received.get(other)!.length;
    scheduler.start();
    try {
      await waitFor(other, otherBefore + 3, 20_000);
      expect(received.get(other)!.length - otherBefore).toBeGreaterThanOrEqual(3);
      expect(received.get(topic)!.length).toBe(before);
    } finally {
      await scheduler.stop();
    }
    scheduler.resume(id);
    await scheduler.fire(id);
    expect((await waitFor(topic, before + 1)).length).toBe(before + 1);
  }, 60_000);
});
