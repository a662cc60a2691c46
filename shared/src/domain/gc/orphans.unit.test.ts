import { describe, expect, it } from 'vitest';
import { uidFor as U } from '../../testing/uid-for.js';
import { instanceNameFromUid } from '../instance-name.js';
import {
  classifyInstances,
  DefaultMinAgeMs,
  keepReasons,
  type ListedInstance,
  sweepRefusal,
} from './orphans.js';

const now = new Date('2026-01-01T01:00:00Z');
const minutesAgo = (m: number) => new Date(now.getTime() - m * 60_000);
const uids = (...keys: string[]) => new Set(keys.map(U));
/** A live set of managed proxies only. */
const managed = (set: ReadonlySet<string>) => ({ uids: set, managed: set });
/** An instance as the plane makes it: labelled with its proxy's uid, named for it (or `name`). */
const inst = (key: string | null, createdAt: Date | null, name?: string): ListedInstance => {
  const uid = key ? U(key) : key;
  return {
    providerId: `zones/z/instances/${name ?? (uid ? instanceNameFromUid(uid) : 'i')}`,
    uid,
    createdAt,
  };
};

describe('classifyInstances (seed §8)', () => {
  const live = uids('live-uid', 'deleting-uid');
  it.each<[string, ListedInstance, boolean, string | undefined]>([
    ['an old labelled instance with no live proxy is deleted', inst('gone', minutesAgo(11)), true, undefined],
    ['exactly MinAge old counts as old enough', inst('gone', minutesAgo(10)), true, undefined],
    ['an unlabelled instance is never touched', inst(null, minutesAgo(60)), false, 'no_ownership_label'],
    ['an empty ownership label is no ownership proof', inst('', minutesAgo(60)), false, 'no_ownership_label'],
    ['a young orphan may be mid-create', inst('gone', minutesAgo(9)), false, 'too_young'],
    [
      'an instance created after the live set was read is kept',
      inst('gone', minutesAgo(-1)),
      false,
      'too_young',
    ],
    ['an instance of unknown age is kept', inst('gone', null), false, 'unknown_age'],
    [
      'an unparseable creation time is unknown, not old',
      inst('gone', new Date('garbage')),
      false,
      'unknown_age',
    ],
    ['a live proxy instance is kept', inst('live-uid', minutesAgo(60)), false, 'live'],
    ['a proxy being deleted still counts as live', inst('deleting-uid', minutesAgo(60)), false, 'live'],
    // Live whatever its age: sweepRefusal weighs orphans against the instances of live proxies.
    ['a young instance of a live proxy is kept as live', inst('live-uid', minutesAgo(1)), false, 'live'],
  ])('%s', (_n, instance, del, keep) => {
    const [v] = classifyInstances([instance], live, now);
    expect(v?.delete).toBe(del);
    expect(v && !v.delete ? v.keep : undefined).toBe(keep);
  });

  it('reports the uid and age of what it deletes', () => {
    const [v] = classifyInstances([inst('gone', minutesAgo(30))], new Set(), now);
    expect(v).toMatchObject({ delete: true, uid: U('gone'), ageMs: 30 * 60_000 });
  });

  it('defaults MinAge to the seed value and honours a custom one', () => {
    expect(DefaultMinAgeMs).toBe(600_000);
    const young = [inst('gone', minutesAgo(2))];
    expect(classifyInstances(young, new Set(), now)[0]?.delete).toBe(false);
    expect(classifyInstances(young, new Set(), now, 60_000)[0]?.delete).toBe(true);
  });

  it('deletes nothing when every uid is live, whatever the age', () => {
    const all = ['a', 'b', 'c'].map((uid) => inst(uid, minutesAgo(600)));
    expect(classifyInstances(all, uids('a', 'b', 'c'), now).some((v) => v.delete)).toBe(false);
  });

  // The label is the uid the instance was created for, in lower case; the stored uid may since have been
  // spelt otherwise in the console. Compared raw, the live proxy's instance read as an orphan.
  it('keeps the instance of a proxy whose stored uid is in capitals or mixed case', () => {
    const label = 'c0ffee00-1234-4abc-8def-0123456789ab';
    for (const stored of [label.toUpperCase(), 'C0ffee00-1234-4ABC-8def-0123456789AB']) {
      const [v] = classifyInstances([inst(label, minutesAgo(60))], new Set([stored]), now);
      expect(v).toMatchObject({ delete: false, keep: 'live' });
    }
    const other = classifyInstances(
      [inst(label, minutesAgo(60))],
      new Set(['c0ffee00-1234-4abc-8dee-0123456789ab']),
      now,
    );
    expect(other[0]?.delete).toBe(true);
  });

  // Labels are no proof the plane made a VM: the console's "create similar" and a machine image copy
  // them, and anyone can set them. The name its uid gives it is (the unrecorded-instance request asks
  // the same). Deleted by labels alone, an operator's clone went once its proxy was deleted.
  it.each<[string, ListedInstance]>([
    ["a clone of a deleted proxy's VM", inst('gone', minutesAgo(60), 'debug-clone')],
    ["a clone of a live proxy's VM", inst('live-uid', minutesAgo(60), 'debug-clone')],
    ['a VM named for another uid', inst('gone', minutesAgo(60), instanceNameFromUid(U('other')))],
    [
      'a VM labelled with a uid not in UUID form',
      { providerId: 'zones/z/instances/my-vm', uid: 'test', createdAt: minutesAgo(60) },
    ],
    ['a pp- name of another length', inst('gone', minutesAgo(60), `${instanceNameFromUid(U('gone'))}0`)],
  ])('keeps %s: not named for its label', (_n, instance) => {
    expect(classifyInstances([instance], live, now)[0]).toMatchObject({
      delete: false,
      keep: 'not_its_name',
    });
  });

  it('counts keep reasons', () => {
    const verdicts = classifyInstances(
      [
        inst(null, minutesAgo(60)),
        inst('live-uid', minutesAgo(60)),
        inst('x', minutesAgo(1)),
        inst('y', null),
      ],
      live,
      now,
    );
    expect(keepReasons(verdicts)).toEqual({ no_ownership_label: 1, live: 1, too_young: 1, unknown_age: 1 });
  });
});

describe('sweepRefusal', () => {
  it('weighs orphans against every instance of a live proxy, young ones too', () => {
    // After a rollout most of a small fleet is younger than MinAge: two VMs left by broken documents
    // deleted through the API (docs/gc-and-rotation.md) are still fewer than the fleet's instances.
    const live = uids('a', 'b', 'c');
    const verdicts = classifyInstances(
      [
        inst('gone-1', minutesAgo(60)),
        inst('gone-2', minutesAgo(60)),
        ...['a', 'b', 'c'].map((uid) => inst(uid, minutesAgo(2))),
      ],
      live,
      now,
    );
    expect(sweepRefusal(verdicts, 10, managed(live))).toBeNull();
    // Without them, two orphans and nothing live: refused.
    expect(sweepRefusal(verdicts.slice(0, 2), 10, managed(live))).toEqual({
      kind: 'refused',
      reason: expect.stringMatching(/2 orphans against 0 instances of live proxies/),
    });
  });

  it('defers rather than refuses when the listing missed part of the fleet, unless past the bound', () => {
    // The three live proxies' VMs sit in a zone that did not answer: two orphans against none seen.
    const live = uids('a', 'b', 'c');
    const verdicts = classifyInstances(
      [inst('gone-1', minutesAgo(60)), inst('gone-2', minutesAgo(60))],
      live,
      now,
    );
    expect(sweepRefusal(verdicts, 10, managed(live), ['gce zone europe-west1-b'])).toEqual({
      kind: 'deferred',
      reason: expect.stringMatching(
        /^2 orphans against 0 instances of live proxies seen, of 3 live proxies \(3 managed with no instance seen\), but the listing missed gce zone europe-west1-b/,
      ),
    });
    // What the listing missed could only add orphans: more than the bound is refused all the same.
    expect(sweepRefusal(verdicts, 1, managed(live), ['gce zone europe-west1-b'])).toMatchObject({
      kind: 'refused',
    });
  });

  // An empty or restored database (nothing live) read while a zone of the project the fleet never uses is
  // down: every VM looks orphaned, and what the listing missed can hold no live proxy's instance.
  it('refuses, not defers, when even an instance of every unseen live proxy could not outnumber the orphans', () => {
    const fleet = ['f1', 'f2', 'f3', 'f4'].map((k) => inst(k, minutesAgo(60)));
    const none = classifyInstances(fleet, uids(), now);
    expect(sweepRefusal(none, 10, managed(uids()), ['gce zone asia-south2-c'])).toEqual({
      kind: 'refused',
      reason: expect.stringMatching(
        /^4 orphans against 0 instances of live proxies seen, of 0 live proxies \(0 managed with no instance seen\): the live set may be wrong/,
      ),
    });
    // The bound is exact: live instances seen plus live proxies with none seen, one instance each at most.
    // `A` stored in capitals holds the VM labelled in lower case, so it is seen: only `b` is unseen.
    const live = new Set([U('a').toUpperCase(), U('b')]);
    const two = classifyInstances([inst('a', minutesAgo(60)), ...fleet.slice(0, 2)], live, now);
    expect(sweepRefusal(two, 10, managed(live), ['gce zone asia-south2-c'])).toMatchObject({
      kind: 'deferred',
    });
    const three = classifyInstances([inst('a', minutesAgo(60)), ...fleet.slice(0, 3)], live, now);
    expect(sweepRefusal(three, 10, managed(live), ['gce zone asia-south2-c'])).toEqual({
      kind: 'refused',
      reason: expect.stringContaining(
        '3 orphans against 1 instances of live proxies seen, of 2 live proxies (1 managed with',
      ),
    });
  });

  // Five external proxies (never a VM) and three managed ones whose documents were deleted by hand (or a
  // restored database without them), read while a zone of the project is down: the three VMs look
  // orphaned, and what the listing missed can hold no live proxy's instance — the external ones have none.
  it('does not count external proxies as live proxies whose instance the listing may have missed', () => {
    const external = uids('e1', 'e2', 'e3', 'e4', 'e5');
    const live = { uids: external, managed: new Set<string>() };
    const verdicts = classifyInstances(
      ['m1', 'm2', 'm3'].map((k) => inst(k, minutesAgo(60))),
      live.uids,
      now,
    );
    expect(sweepRefusal(verdicts, 10, live, ['gce zone asia-south2-c'])).toEqual({
      kind: 'refused',
      reason: expect.stringMatching(
        /^3 orphans against 0 instances of live proxies seen, of 5 live proxies \(0 managed with no instance seen\): the live set may be wrong/,
      ),
    });
    // One managed proxy among them, unseen: still refused (three orphans against at most one live VM).
    const mixed = { uids: new Set([...external, U('m0')]), managed: uids('m0') };
    expect(sweepRefusal(verdicts, 10, mixed, ['gce zone asia-south2-c'])).toMatchObject({ kind: 'refused' });
  });

  it("does not count a clone of a live proxy's VM as one of the live proxies' instances", () => {
    const verdicts = classifyInstances(
      [
        inst('gone-1', minutesAgo(60)),
        inst('gone-2', minutesAgo(60)),
        inst('a', minutesAgo(60)),
        inst('a', minutesAgo(60), 'clone-1'),
        inst('a', minutesAgo(60), 'clone-2'),
      ],
      uids('a'),
      now,
    );
    expect(sweepRefusal(verdicts, 10, managed(uids('a')))?.reason).toMatch(
      /2 orphans against 1 instances of live proxies seen, of 1 live proxies: the live set may be wrong/,
    );
  });
});
