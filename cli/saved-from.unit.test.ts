import { describe, expect, it } from 'vitest';
import { describeFailure } from './hints.js';
import { staleFileError, staleness } from './saved-from.js';

const uid = '5b0c7a0e-0c3f-4b7e-9d0f-2f7b1c1d8e11';

describe('staleness', () => {
  it.each([
    ['a file that says nothing of where it came from', {}, { uid, generation: 9 }],
    ['the same proxy at the same generation', { uid, generation: 3 }, { uid, generation: 3 }],
    ['the same generation, no uid in the file', { generation: 3 }, { uid, generation: 3 }],
    ['the same uid, no generation in the file', { uid }, { uid, generation: 7 }],
  ])('is null for %s', (_, savedFrom, stored) => {
    expect(staleness('edge-1', savedFrom, stored)).toBeNull();
  });

  it('says when the proxy changed since the file was saved', () => {
    expect(staleness('edge-1', { uid, generation: 3 }, { uid, generation: 5 })).toBe(
      'proxy/edge-1 is at generation 5, the file was saved at generation 3: its spec changed since',
    );
    expect(staleness('edge-1', { generation: 6 }, { uid, generation: 5 })).toBe(
      'proxy/edge-1 is at generation 5, the file was saved at generation 6',
    );
  });

  it('says when the proxy was deleted since, and is null for a hand-written file of a new proxy', () => {
    expect(staleness('edge-1', { uid, generation: 3 }, null)).toBe(
      'proxy/edge-1 does not exist: deleted since the file was saved, or renamed in it? `proxies create -f` the file to create it',
    );
    expect(staleness('edge-1', { generation: 3 }, null)).not.toBeNull();
    expect(staleness('edge-1', {}, null)).toBeNull();
  });

  it('says when the proxy of that name is another one (deleted and created again, at any generation)', () => {
    const other = '00000000-0000-4000-8000-000000000001';
    expect(staleness('edge-1', { uid, generation: 1 }, { uid: other, generation: 1 })).toBe(
      `proxy/edge-1 is not the proxy the file was saved from (uid ${other}, the file's ${uid}): deleted and created again since?`,
    );
  });
});

describe('staleFileError', () => {
  it('is precondition_failed, exit 1, with what to do and each proxy', () => {
    expect(describeFailure(staleFileError('p.yaml', ['p.yaml: why'], 'nothing was applied'))).toEqual({
      lines: [
        "error: precondition_failed — p.yaml was saved before the stored proxy's latest change; nothing was applied — `proxies get` it again and redo the edit, or delete `generation` and `uid` from the file to apply it over the stored spec",
        '  p.yaml: why',
      ],
      exitCode: 1,
    });
  });
});
