// Bad input to the probe function (issue 4): a malformed or unknown tick is acknowledged and logged by
// the real function process behind a real push subscription — delivered once: never retried, so never
// dead-lettered (a nacked tick is redelivered within 1–5 s locally, and logged again each time; only the
// fifth nack would dead-letter it, ~15 s on, which a short look at the dead-letter topic could not see).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testProjectId } from '../support/emulators.js';
import { startTestPlane, type TestPlane } from '../support/local-plane.js';

describe('probe function: poison ticks', () => {
  let plane: TestPlane;
  beforeAll(async () => {
    plane = await startTestPlane({ projectId: testProjectId(), functions: ['probe'] });
  });
  afterAll(async () => {
    await plane?.stop();
  });

  const logLines = () =>
    readFileSync(join(plane.logDir, 'function-probe.log'), 'utf8')
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);

  it('acknowledges and logs malformed and unknown ticks exactly once', async () => {
    const ids = [
      await plane.publisher.publishRaw('ticks-probe', Buffer.from('not json at all')),
      await plane.publisher.publishRaw('ticks-probe', Buffer.from('{"job": 42}')),
      await plane.publisher.publishRaw('ticks-probe', Buffer.from('{"job":"reticulate-splines"}')),
    ];
    const acked = () =>
      logLines().filter((l) => typeof l.messageId === 'string' && ids.includes(l.messageId as string));
    // Up to 30 s for the three push deliveries to be logged (it stops as soon as they are): 10 s was too
    // short on a loaded runner.
    for (let i = 0; i < 300 && acked().length < 3; i++) await sleep(100);
    expect(
      acked()
        .map((l) => l.message)
        .sort(),
    ).toEqual([
      'malformed tick acknowledged',
      'malformed tick acknowledged',
      'tick for another job acknowledged',
    ]);
    // Long enough for several redeliveries had any been nacked (local retry backoff is 1–5 s).
    await sleep(6000);
    expect(acked()).toHaveLength(3);
  });
});
