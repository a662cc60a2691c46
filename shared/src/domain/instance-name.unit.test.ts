import { describe, expect, it } from 'vitest';
import { instanceNameFromUid, uidNamePrefixes } from './instance-name.js';

describe('instanceNameFromUid', () => {
  it('is pp- and the first 20 hex digits of the uid, an RFC 1035 label', () => {
    const name = instanceNameFromUid('3F2504E0-4F89-41D3-9A0C-0305E82C3301');
    expect(name).toBe('pp-3f2504e04f8941d39a0c');
    expect(name).toMatch(/^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$/);
  });

  it('is deterministic and tells different uids apart', () => {
    const a = '00000000-0000-4000-8000-000000000001';
    expect(instanceNameFromUid(a)).toBe(instanceNameFromUid(a));
    expect(instanceNameFromUid(a)).not.toBe(instanceNameFromUid('00000000-0000-4000-9000-000000000001'));
  });

  it.each(['', 'not-a-uid', 'zz000000-0000-4000-8000-000000000001'])('rejects %j', (uid) => {
    expect(() => instanceNameFromUid(uid)).toThrow(RangeError);
  });
});

describe('uidNamePrefixes', () => {
  it('is the part of the uid its instance name keeps, in both cases: every uid starting so names it', () => {
    const uid = '3f2504e0-4f89-41d3-9a0c-0305e82c3301';
    expect(uidNamePrefixes(uid)).toEqual(['3f2504e0-4f89-41d3-9a0c', '3F2504E0-4F89-41D3-9A0C']);
    for (const other of [uid.toUpperCase(), '3f2504e0-4f89-41d3-9a0c-000000000000']) {
      expect(instanceNameFromUid(other)).toBe(instanceNameFromUid(uid));
      expect(uidNamePrefixes(other).some((p) => other.startsWith(p))).toBe(true);
    }
    expect(uidNamePrefixes('00000000-0000-4000-8000-000000000001')).toEqual(['00000000-0000-4000-8000']);
  });

  it.each(['', 'not-a-uid', '3f2504e04f8941d39a0c0305e82c3301'])('rejects %j', (uid) => {
    expect(() => uidNamePrefixes(uid)).toThrow(RangeError);
  });
});
