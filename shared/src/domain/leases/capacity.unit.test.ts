import { describe, expect, it } from 'vitest';
import { extendEntry, grantEntry, hasRoom, removeEntry, usageOf } from './capacity.js';
import { at, entry, UID } from './fixtures.unit.js';

const now = at(100);

describe('usageOf', () => {
  it.each([
    { name: 'empty', entries: [], active: 0, exclusive: false },
    { name: 'one live', entries: [entry('a', 200)], active: 1, exclusive: false },
    {
      name: 'expired stops counting at its expiry',
      entries: [entry('a', 100), entry('b', 101)],
      active: 1,
      exclusive: false,
    },
    { name: 'live exclusive', entries: [entry('a', 200, true)], active: 1, exclusive: true },
    {
      name: 'expired exclusive',
      entries: [entry('a', 99, true), entry('b', 200)],
      active: 1,
      exclusive: false,
    },
  ])('$name', ({ entries, active, exclusive }) => {
    expect(usageOf(entries, UID, now)).toEqual({ active, exclusive });
  });
});

describe('hasRoom', () => {
  it.each([
    { usage: { active: 0, exclusive: false }, capacity: 2, exclusive: false, room: true },
    { usage: { active: 1, exclusive: false }, capacity: 2, exclusive: false, room: true },
    { usage: { active: 2, exclusive: false }, capacity: 2, exclusive: false, room: false },
    { usage: { active: 3, exclusive: false }, capacity: 2, exclusive: false, room: false },
    { usage: { active: 0, exclusive: false }, capacity: 2, exclusive: true, room: true },
    { usage: { active: 1, exclusive: false }, capacity: 2, exclusive: true, room: false },
    { usage: { active: 1, exclusive: true }, capacity: 2, exclusive: false, room: false },
    { usage: { active: 1, exclusive: true }, capacity: 1000, exclusive: false, room: false },
  ])(
    '$usage.active active (exclusive $usage.exclusive), capacity $capacity, exclusive request $exclusive → $room',
    ({ usage, capacity, exclusive, room }) => {
      expect(hasRoom(usage, capacity, exclusive)).toBe(room);
    },
  );
});

describe('grantEntry', () => {
  it.each([
    { name: 'into empty', entries: [], capacity: 1, exclusive: false, after: ['new'] },
    { name: 'full', entries: [entry('a', 200), entry('b', 200)], capacity: 2, exclusive: false, after: null },
    {
      name: 'full of expired: pruned and granted',
      entries: [entry('a', 50), entry('b', 100)],
      capacity: 2,
      exclusive: false,
      after: ['new'],
    },
    { name: 'exclusive needs empty', entries: [entry('a', 200)], capacity: 5, exclusive: true, after: null },
    {
      name: 'exclusive after expiry',
      entries: [entry('a', 10)],
      capacity: 5,
      exclusive: true,
      after: ['new'],
    },
    {
      name: 'nothing beside an exclusive',
      entries: [entry('a', 200, true)],
      capacity: 5,
      exclusive: false,
      after: null,
    },
    { name: 'beside one', entries: [entry('a', 200)], capacity: 2, exclusive: false, after: ['a', 'new'] },
  ])('$name', ({ entries, capacity, exclusive, after }) => {
    const granted = grantEntry(
      entries,
      { leaseId: 'new', expiresAt: at(400), exclusive, proxyUid: UID },
      capacity,
      now,
    );
    expect(granted?.map((e) => e.leaseId) ?? null).toEqual(after);
  });
});

describe('removeEntry / extendEntry', () => {
  const entries = [entry('a', 200), entry('gone', 90), entry('b', 300)];
  it.each([
    { id: 'a', removed: ['b'] },
    { id: 'b', removed: ['a'] },
    { id: 'gone', removed: null },
    { id: 'unknown', removed: null },
  ])('remove $id', ({ id, removed }) => {
    expect(removeEntry(entries, id, now)?.map((e) => e.leaseId) ?? null).toEqual(removed);
  });
  it.each([
    { id: 'a', extended: true },
    { id: 'gone', extended: false },
    { id: 'unknown', extended: false },
  ])('extend $id', ({ id, extended }) => {
    const after = extendEntry(entries, id, at(999), now);
    expect(after !== null).toBe(extended);
    if (after) {
      expect(after.find((e) => e.leaseId === id)?.expiresAt).toEqual(at(999));
      expect(after.map((e) => e.leaseId)).toEqual(['a', 'b']);
    }
  });
});
