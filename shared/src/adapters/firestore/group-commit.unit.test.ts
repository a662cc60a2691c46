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
          : resolve(this.writes.map((_, i) => ({ writeTime: this.log.indexOf(this) * 100 + i })));
    });
  }
  settle: () => void = () => {};
}

function setup(maxInFlight: number, maxCallers?: number, splitOn?: (err: unknown) => boolean) {
  const sent: FakeBatch[] = [];
  const committer = new GroupCommitter(() => new FakeBatch(sent), { maxInFlight, maxCallers, splitOn });
  /**
   * One caller writing `name` (and `name+` too when `two`), giving up when `signal` aborts: resolves to its
   * own writes' times.
   */
  const write = (key: string, name = key, two = false, signal?: AbortSignal) =>
    committer
      .commit(
        [key],
        (b: FakeBatch) => {
          b.set(name);
          if (two) b.set(`${name}+`);
          return two ? 2 : 1;
        },
        signal,
      )
      .then((results) => results.map((r) => r.writeTime));
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
    expect(await Promise.all(results)).toEqual([[0], [100], [101], [102]]);
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
    expect(await Promise.all(group)).toEqual([{ ok: [200] }, { code: 9 }, { ok: [400] }]);
    expect(sent.map((b) => b.writes)).toEqual([['a'], ['b', 'bad', 'c'], ['b'], ['bad'], ['c']]);
    expect(committer.counts.splits).toBe(1);
  });

  it('gives each caller the results of its own writes, in its order', async () => {
    const { write, flush } = setup(1);
    const first = write('a');
    const rest = [write('b', 'b', true), write('c'), write('d', 'd', true)];
    await flush();
    await first;
    expect(await Promise.all(rest)).toEqual([[100, 101], [102], [103, 104]]);
  });

  it('does not split on a failure that is not a caller’s own: everyone gets it at once', async () => {
    const { sent, write, flush, committer } = setup(1, 50, (err) => (err as { code: number }).code !== 9);
    const first = write('a');
    const group = [write('b'), write('bad')].map((p) => p.catch((err: { code: number }) => err.code));
    await flush();
    await first;
    expect(await Promise.all(group)).toEqual([9, 9]);
    expect(sent).toHaveLength(2);
    expect(committer.counts.splits).toBe(0);
  });

  it('settles every caller when a batch cannot even be made, and keeps serving', async () => {
    let broken = true;
    const sent: FakeBatch[] = [];
    const committer = new GroupCommitter<FakeBatch, number>(
      () => {
        if (broken) throw new Error('no batch');
        return new FakeBatch(sent);
      },
      { maxInFlight: 1 },
    );
    const one = (k: string) =>
      committer.commit([k], (b) => {
        b.set(k);
        return 1;
      });
    await expect(Promise.all([one('a'), one('b'), one('c')])).rejects.toThrow('no batch');
    broken = false;
    const next = one('d');
    for (const b of sent) b.settle();
    await new Promise((r) => setImmediate(r));
    for (const b of sent) b.settle();
    expect(await next).toEqual([{ writeTime: 0 }]);
  });

  it('treats nonsense limits as 1', async () => {
    const { sent, write, flush } = setup(0, 0);
    const all = ['a', 'b'].map((k) => write(k));
    await flush();
    await Promise.all(all);
    expect(sent.map((b) => b.writes)).toEqual([['a'], ['b']]);
  });
});

describe('GroupCommitter: a caller that gives up', () => {
  // Firestore stalled: the commits in flight hang, every request's writes queue behind them, and each
  // request answers 503 at its deadline. Sent once Firestore came back, those writes landed — a grant as a
  // lease nobody holds — and the queue grew without bound meanwhile.
  it('has its writes taken out of the queue, never sent, and is rejected with its reason', async () => {
    const { sent, write, flush } = setup(1);
    const first = write('a');
    const gaveUp = new AbortController();
    const queued = write('b', 'b', false, gaveUp.signal);
    const kept = write('c');
    gaveUp.abort(new Error('deadline'));
    await expect(queued).rejects.toThrow('deadline');
    await flush();
    expect(sent.map((b) => b.writes)).toEqual([['a'], ['c']]);
    expect(await Promise.all([first, kept])).toEqual([[0], [100]]);
  });

  it('once sent, giving up changes nothing: the commit settles as it does', async () => {
    const { sent, write, flush } = setup(1);
    const gaveUp = new AbortController();
    const sentOne = write('a', 'a', false, gaveUp.signal);
    gaveUp.abort(new Error('deadline'));
    await flush();
    expect(sent.map((b) => b.writes)).toEqual([['a']]);
    expect(await sentOne).toEqual([0]);
  });

  // Firestore slow and contended: the caller's deadline passes while the combined commit it is in is out;
  // the commit then fails another caller's precondition (it did not land) and is split — and the re-send
  // of the caller that gave up landed, a lease nobody holds.
  it('is not sent again when the combined commit it was in fails and is split', async () => {
    const { sent, write, flush } = setup(1);
    const first = write('x');
    const gaveUp = new AbortController();
    const a = write('a', 'a', false, gaveUp.signal).then(
      () => 'resolved',
      (e: unknown) => e,
    );
    const bad = write('b', 'bad-b').catch((e: unknown) => e);
    sent[0]!.settle();
    await new Promise((r) => setImmediate(r));
    expect(sent.map((b) => b.writes)).toEqual([['x'], ['a', 'bad-b']]);
    gaveUp.abort(new Error('deadline'));
    await flush();
    expect(sent.map((b) => b.writes)).toEqual([['x'], ['a', 'bad-b'], ['bad-b']]);
    expect(await a).toMatchObject({ message: 'deadline' });
    expect(await first).toEqual([0]);
    expect(await bad).toMatchObject({ code: 9 });
  });

  it('an already aborted signal sends nothing', async () => {
    const { sent, write } = setup(1);
    await expect(write('a', 'a', false, AbortSignal.abort(new Error('too late')))).rejects.toThrow(
      'too late',
    );
    expect(sent).toEqual([]);
  });
});
