// Brief invariant 2: a steady fleet costs zero Firestore writes per tick. 50 healthy proxies (real
// instances on the Compute emulator), 10 probe ticks: after the first verdicts, no proxy or health
// document changes. The only write per tick is the probe job's own run record (issue 11), one document.
import type { Firestore } from '@google-cloud/firestore';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testProjectId } from '../support/emulators.js';
import { type ProbeFleet, startProbeFleet } from '../support/probe-fleet.js';

async function updateTimes(db: Firestore, collection: string): Promise<Map<string, string>> {
  const snap = await db.collection(collection).get();
  return new Map(
    snap.docs.map((d) => [d.id, d.updateTime.toDate().toISOString() + d.updateTime.nanoseconds]),
  );
}

describe('a steady fleet costs zero writes per probe tick', () => {
  let fleet: ProbeFleet;
  beforeAll(async () => {
    fleet = await startProbeFleet(testProjectId());
    for (let i = 0; i < 50; i += 10) {
      await Promise.all(Array.from({ length: 10 }, (_, j) => fleet.add(`steady-${i + j}`)));
    }
  }, 180_000);
  afterAll(async () => {
    await fleet?.stop();
  });

  it('50 healthy proxies over 10 ticks: no proxy or health document is written after the first verdicts', async () => {
    // successThreshold 2: two ticks to the first verdicts.
    await fleet.tick();
    await fleet.tick();
    const health = await fleet.health.getMany(Array.from({ length: 50 }, (_, i) => `steady-${i}`));
    expect([...health.values()].filter((h) => h.state.verdict === 'AVAILABLE')).toHaveLength(50);

    const beforeHealth = await updateTimes(fleet.db, 'health');
    const beforeProxies = await updateTimes(fleet.db, 'proxies');
    fleet.published.length = 0;
    let probed = 0;
    for (let t = 0; t < 10; t++) {
      const run = await fleet.tick();
      probed += run?.probed ?? 0;
      expect(run?.written).toBe(0);
    }
    expect(probed).toBe(500);
    expect(await updateTimes(fleet.db, 'health')).toEqual(beforeHealth);
    expect(await updateTimes(fleet.db, 'proxies')).toEqual(beforeProxies);
    expect(fleet.published).toEqual([]);
  });
});
