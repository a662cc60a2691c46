import { describe, expect, it } from 'vitest';
import { type CommitBatch, GroupCommitter } from './group-commit.js';

/** A batch of named writes; commits resolve when the test says so, and fail if any write is "bad". */
class FakeBatch implements CommitBatch<number> {
  readonly writes: string[] = [];
  constructor(private readonly log: FakeBatch[]) {}
  set(name: string): void {
    this.writes.push(name);
  }
  commit(): Promise<ReadonlyArray<{ writeTime: number }>> {
    this.log.push(this);
    return new Promise((resolve, reject) => {
      this.settle = () =>
        this.writes.some((w) => w.startsWith('bad'))
          ? reject(Object.assign(new Error('precondition'), { code: 9 }))
          : resolve(this.writes.map(() => ({ writeTime: this.log.indexOf(this) })));
    });
  }
  settle: () => void = () => {};
}

function setup(maxInFlight: number, maxCallers?: number) {
  const sent: FakeBatch[] = [];
  const committer = new GroupCommitter(() => new FakeBatch(sent), { maxInFlight, maxCallers });
  const write = (key: string, name = key) => committer.commit([key], (b: FakeBatch) => b.set(name));
  /** Settles every commit sent so far, and lets the committer send what queued behind them. */
  const flush = async () => {
    for (let i = 0; i < 5; i++) {
      for (const b of sent) b.settle();
      await new Promise((r) => setImmediate(r));
    }
  };
  return { sent, committer, write, flush };
}

describe('GroupCommitter', () => {
  it('sends at once while under maxInFlight: light load waits for nothing', () => {
    const { sent, write } = setup(2);
    void write('a');
    void write('b');
    expect(sent.map((b) => b.writes)).toEqual([['a'], ['b']]);
  });

  it('puts everything that queued behind a busy store into the next commit', async () => {
    const { sent, write, flush, committer } = setup(1);
    const results = ['a', 'b', 'c', 'd'].map((k) => write(k));
    expect(sent.map((b) => b.writes)).toEqual([['a']]);
    await flush();
    expect(sent.map((b) => b.writes)).toEqual([['a'], ['b', 'c', 'd']]);
    expect(await Promise.all(results)).toEqual([0, 1, 1, 1]);
    expect(committer.counts).toEqual({ commits: 2, combined: 1, splits: 0 });
  });

  it('never puts two writes of one document in one commit', async () => {
    const { sent, write, flush } = setup(1);
    void write('x', 'x0');
    const rest = [write('a'), write('x', 'x1'), write('b'), write('x', 'x2')];
    await flush();
    await Promise.all(rest);
    expect(sent.map((b) => b.writes)).toEqual([['x0'], ['a', 'x1', 'b'], ['x2']]);
  });

  it('caps the callers per commit', async () => {
    const { sent, write, flush } = setup(1, 2);
    const all = ['a', 'b', 'c', 'd', 'e'].map((k) => write(k));
    await flush();
    await Promise.all(all);
    expect(sent.map((b) => b.writes)).toEqual([['a'], ['b', 'c'], ['d', 'e']]);
  });

  it('when one write fails a combined commit, each commits alone and only that one fails', async () => {
    const { sent, write, flush, committer } = setup(1);
    const first = write('a');
    const group = [write('b'), write('bad'), write('c')].map((p) =>
      p.then(
        (t) => ({ ok: t }),
        (err: { code: number }) => ({ code: err.code }),
      ),
    );
    await flush();
    await first;
    expect(await Promise.all(group)).toEqual([{ ok: 2 }, { code: 9 }, { ok: 4 }]);
    expect(sent.map((b) => b.writes)).toEqual([['a'], ['b', 'bad', 'c'], ['b'], ['bad'], ['c']]);
    expect(committer.counts.splits).toBe(1);
  });
});
