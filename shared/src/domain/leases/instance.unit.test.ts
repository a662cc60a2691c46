import { describe, expect, it } from 'vitest';
import { grantEntry, isLeased, usageOf } from './capacity.js';
import { at, entry, UID } from './fixtures.unit.js';
import { ofInstance, renewsOn, reportCoolsDown, sameInstance } from './instance.js';

/** The uid of a proxy created again under the name of the one that had UID. */
const NEW = '11111111-1111-4111-8111-111111111111';
const now = at(100);

describe('sameInstance', () => {
  it.each([
    { recorded: UID, uid: UID, same: true },
    { recorded: UID, uid: NEW, same: false },
    { recorded: null, uid: NEW, same: true },
    { recorded: undefined, uid: NEW, same: true },
  ])('recorded $recorded, proxy $uid → $same', ({ recorded, uid, same }) => {
    expect(sameInstance(recorded, uid)).toBe(same);
  });
});

describe('capacity counts the instance, not the name', () => {
  const old = entry('old', 200, false, UID);
  const legacy = entry('legacy', 200, false, null);

  it('entries of a deleted namesake do not count; entries without a uid count for whoever has the name', () => {
    expect(ofInstance([old, legacy], NEW).map((e) => e.leaseId)).toEqual(['legacy']);
    expect(usageOf([old], NEW, now)).toEqual({ active: 0, exclusive: false });
    expect(usageOf([old], UID, now)).toEqual({ active: 1, exclusive: false });
    expect(usageOf([legacy], NEW, now)).toEqual({ active: 1, exclusive: false });
  });

  it('the snapshot planner holds a pool proxy back only for leases of its own instance (or of none)', () => {
    expect(isLeased([old], NEW, now)).toBe(false);
    expect(isLeased([old], UID, now)).toBe(true);
    expect(isLeased([old, legacy], NEW, now)).toBe(true);
    expect(isLeased([entry('ended', 50, false, NEW)], NEW, now)).toBe(false);
  });

  it("a namesake's exclusive lease does not fill the new proxy", () => {
    expect(usageOf([entry('old', 200, true, UID)], NEW, now)).toEqual({ active: 0, exclusive: false });
  });

  it('a grant on the new proxy has room beside the old one’s leases, and keeps them until they expire', () => {
    const fresh = { leaseId: 'new', expiresAt: at(400), exclusive: false, proxyUid: NEW };
    const granted = grantEntry([old, entry('gone', 50, false, UID)], fresh, 1, now);
    // The live entry of the old instance stays (a replica whose catalog is behind still counts it for
    // that instance); the expired one is pruned as always.
    expect(granted?.map((e) => e.leaseId)).toEqual(['old', 'new']);
    expect(grantEntry(granted ?? [], { ...fresh, leaseId: 'again' }, 1, now)).toBeNull();
  });

  it('an entry without a uid still takes the capacity of the proxy of its name (compatibility)', () => {
    const fresh = { leaseId: 'new', expiresAt: at(400), exclusive: false, proxyUid: NEW };
    expect(grantEntry([legacy], fresh, 1, now)).toBeNull();
  });
});

describe('renew and report follow the instance', () => {
  const listed = (uid: string) => ({ name: 'us-1', uid });

  it.each([
    { name: 'same proxy', proxyUid: UID, proxy: listed(UID), renews: true, coolsDown: true },
    { name: 'recreated under the name', proxyUid: UID, proxy: listed(NEW), renews: false, coolsDown: false },
    { name: 'gone', proxyUid: UID, proxy: undefined, renews: false, coolsDown: false },
    {
      name: 'stored before uids, proxy listed',
      proxyUid: null,
      proxy: listed(NEW),
      renews: true,
      coolsDown: true,
    },
    {
      name: 'stored before uids, proxy gone',
      proxyUid: null,
      proxy: undefined,
      renews: false,
      coolsDown: true,
    },
  ])('$name: renews $renews, cools down $coolsDown', ({ proxyUid, proxy, renews, coolsDown }) => {
    expect(renewsOn({ proxyUid }, proxy)).toBe(renews);
    expect(reportCoolsDown({ proxyUid }, proxy)).toBe(coolsDown);
  });
});
