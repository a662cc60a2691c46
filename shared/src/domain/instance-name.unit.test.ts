import { describe, expect, it } from 'vitest';
import { testUid } from '../testing/proxy-fixtures.js';
import { instanceNameFromUid, uidKey, uidKeyPrefixes } from './instance-name.js';

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

  it("tells the test fixtures' uids apart, so that two fixture proxies never name one VM", () => {
    const names = new Set([1, 2, 0xff, 0x1_0000].map((n) => instanceNameFromUid(testUid(n))));
    expect(names.size).toBe(4);
  });

  it.each(['', 'not-a-uid', 'zz000000-0000-4000-8000-000000000001'])('rejects %j', (uid) => {
    expect(() => instanceNameFromUid(uid)).toThrow(RangeError);
  });
});

describe('uidKey: the one comparison of "names the same instance"', () => {
  it('is the first 20 hex digits, dashes kept, in lower case: the same for every spelling of the instance', () => {
    const uid = '3f2504e0-4f89-41d3-9a0c-0305e82c3301';
    expect(uidKey(uid)).toBe('3f2504e0-4f89-41d3-9a0c');
    for (const other of [
      uid.toUpperCase(),
      '3F2504e0-4f89-41D3-9a0C-0305e82c3301',
      '3f2504e0-4f89-41d3-9a0c-000000000000',
    ]) {
      expect(instanceNameFromUid(other)).toBe(instanceNameFromUid(uid));
      expect(uidKey(other)).toBe(uidKey(uid));
    }
    expect(uidKey('3f2504e0-4f89-41d3-9a0d-0305e82c3301')).not.toBe(uidKey(uid));
  });

  // A stored uid cut short or lengthened by a console edit no longer fits the model, but starts with the
  // same name characters: holdsUid found it by prefix before uidKey, and must still (its instance is it).
  it("keys a string that starts with a UUID's name characters on them, whatever follows", () => {
    const uid = '3f2504e0-4f89-41d3-9a0c-0305e82c3301';
    for (const edited of [uid.slice(0, 30), `${uid}0`, `${uid.toUpperCase()} `, uid.slice(0, 23)])
      expect(uidKey(edited)).toBe(uidKey(uid));
  });

  it('lower-cases a string that is no UUID whole', () => {
    expect(uidKey('Not-A-Uid')).toBe('not-a-uid');
  });
});

describe('uidKeyPrefixes', () => {
  it('covers every mix of cases of the uid with at most 8 prefixes', () => {
    const uid = '3f2504e0-4f89-41d3-9a0c-0305e82c3301';
    // f, e, f are its first three letters; the d of 41d3 would be a fourth: the part ends before it.
    const prefixes = uidKeyPrefixes(uid);
    expect(prefixes).toHaveLength(8);
    expect(prefixes).toContain('3f2504e0-4f89-41');
    expect(prefixes).toContain('3F2504E0-4F89-41');
    expect(prefixes).toContain('3F2504e0-4f89-41');
    const key = uidKey(uid);
    const letters = [...key].flatMap((c, i) => (/[a-f]/.test(c) ? [i] : []));
    // Every spelling of the name characters (all 2^letters of them) starts with one prefix.
    for (let mask = 0; mask < 2 ** letters.length; mask++) {
      const chars = [...key];
      letters.forEach((at, bit) => {
        if (mask & (1 << bit)) chars[at] = chars[at]!.toUpperCase();
      });
      const spelt = `${chars.join('')}-0305e82c3301`;
      expect(uidKeyPrefixes(uid).some((p) => spelt.startsWith(p))).toBe(true);
      expect(uidKey(spelt)).toBe(key);
    }
    for (const other of ['abcdefab-abcd-4bcd-abcd-abcdefabcdef', 'ABCDEFAB-ABCD-4BCD-ABCD-ABCDEFABCDEF'])
      expect(uidKeyPrefixes(other)).toHaveLength(8);
    // Digits and dashes only: one prefix, the whole name characters.
    expect(uidKeyPrefixes('00000000-0000-4000-8000-000000000001')).toEqual(['00000000-0000-4000-8000']);
  });

  it.each(['', 'not-a-uid', '3f2504e04f8941d39a0c0305e82c3301'])('rejects %j', (uid) => {
    expect(() => uidKeyPrefixes(uid)).toThrow(RangeError);
  });
});
