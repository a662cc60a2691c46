import { Timestamp } from '@google-cloud/firestore';
import { describe, expect, it } from 'vitest';
import { cursorFromSnapshot } from './passive-feed-store.js';

const version = new Timestamp(1_767_225_600, 5);
const through = new Timestamp(1_767_225_000, 0);
const snap = (exists: boolean, data: Record<string, unknown>) => ({
  exists,
  updateTime: exists ? version : undefined,
  get: (field: string) => data[field],
});

describe('cursorFromSnapshot', () => {
  it.each<[string, ReturnType<typeof snap>, unknown]>([
    ['no document: no cursor (the first commit creates it)', snap(false, {}), null],
    [
      'a readable cursor',
      snap(true, { through, tracked: ['a', 7, 'b'] }),
      {
        cursor: { through: through.toDate(), token: '1767225600.000000005', tracked: ['a', 'b'] },
        malformed: false,
      },
    ],
    [
      'an unreadable `through`: nothing counted, but at the document’s version so the commit updates it',
      snap(true, { through: '2026-01-01', tracked: ['a'] }),
      { cursor: { through: new Date(0), token: '1767225600.000000005', tracked: ['a'] }, malformed: true },
    ],
    [
      'an unreadable `tracked`',
      snap(true, { through, tracked: 'a' }),
      { cursor: { through: through.toDate(), token: '1767225600.000000005', tracked: [] }, malformed: true },
    ],
  ])('%s', (_n, s, expected) => {
    expect(cursorFromSnapshot(s as never)).toEqual(expected);
  });
});
