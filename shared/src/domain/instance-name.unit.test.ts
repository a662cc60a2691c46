import { describe, expect, it } from 'vitest';
import { instanceNameFromUid } from './instance-name.js';

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
