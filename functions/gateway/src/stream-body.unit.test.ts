import type { IncomingMessage, ServerResponse } from 'node:http';
import { PassThrough, Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { streamBody } from './stream-body.js';

/**
 * A target response and a client response as streams; `got` is what reached the client. A `slow` client
 * takes nothing until `read()`: what was written stays queued, as for a reader that stopped reading.
 */
function pair(clientHighWaterMark = 1 << 20, slow = false) {
  const res = new PassThrough();
  const got: Buffer[] = [];
  const held: (() => void)[] = [];
  const out = new Writable({
    highWaterMark: clientHighWaterMark,
    write(chunk: Buffer, _enc, cb) {
      const take = () => {
        got.push(chunk);
        cb();
      };
      if (slow) held.push(take);
      else take();
    },
  });
  const read = () => {
    slow = false;
    for (const take of held.splice(0)) take();
  };
  /** Each release, with whether the target's side broke the body off (a TUNNEL failure: fetch-through.ts). */
  const releases: boolean[] = [];
  const cut = streamBody(res as unknown as IncomingMessage, out as unknown as ServerResponse, 100, (broken) =>
    releases.push(broken),
  );
  const settled = () => new Promise((r) => setImmediate(r));
  return { res, out, got, releases, settled, read, cut };
}

describe('streamBody', () => {
  it('relays a whole body and ends the client response once, releasing the slot once', async () => {
    const p = pair();
    p.res.end(Buffer.alloc(60, 1));
    await p.settled();
    expect(Buffer.concat(p.got).length).toBe(60);
    expect(p.out.writableFinished).toBe(true);
    expect(p.releases).toEqual([false]);
  });

  // Released with the tail still queued, the slot read as free: a SIGTERM drain saw nothing in flight and
  // destroyed the client with the tail unsent.
  it('a whole body still queued for a slow reader holds the slot until its tail is written', async () => {
    const p = pair(16, true);
    p.res.end(Buffer.alloc(60, 1));
    await p.settled();
    expect(p.out.writableEnded).toBe(true);
    expect(p.releases).toEqual([]);
    p.read();
    await p.settled();
    expect(Buffer.concat(p.got).length).toBe(60);
    expect(p.releases).toEqual([false]);
  });

  it('a slow reader that leaves before its tail is written releases once, not broken', async () => {
    const p = pair(16, true);
    p.res.end(Buffer.alloc(60, 1));
    await p.settled();
    p.out.destroy();
    await p.settled();
    expect(p.out.writableFinished).toBe(false);
    expect(p.releases).toEqual([false]);
  });

  // The fetch's deadline bounds that hold: at once, not at the client response's 'close', which one
  // pipelined behind another emits only once it has the socket.
  it("the deadline's cut ends a queued tail and releases at once, not broken", async () => {
    const p = pair(16, true);
    p.res.end(Buffer.alloc(60, 1));
    await p.settled();
    p.cut();
    expect(p.releases).toEqual([false]);
    expect(p.out.destroyed).toBe(true);
    await p.settled();
    expect(p.releases).toEqual([false]);
  });

  it('cuts the client off past the cap without sending the chunk that crosses it', async () => {
    const p = pair();
    p.res.write(Buffer.alloc(60, 1));
    p.res.write(Buffer.alloc(60, 2));
    await p.settled();
    expect(Buffer.concat(p.got).length).toBe(60);
    expect(p.out.destroyed).toBe(true);
    expect(p.out.writableFinished).toBe(false);
    expect(p.releases).toEqual([false]);
  });

  it('a response dumped under it (the fetch deadline destroying the request) is cut off, not ended', async () => {
    const p = pair();
    p.res.write(Buffer.alloc(30, 1));
    await p.settled();
    // What Node's IncomingMessage._dump() does when its request is destroyed: every 'data' listener goes,
    // the rest of the body is read and dropped, and 'end' still comes.
    p.res.removeAllListeners('data');
    p.res.resume();
    p.res.end(Buffer.alloc(30, 2));
    await p.settled();
    expect(Buffer.concat(p.got).length).toBe(30);
    expect(p.out.destroyed).toBe(true);
    expect(p.out.writableFinished).toBe(false);
    expect(p.releases).toEqual([false]);
  });

  it.each([
    ['with an error (a reset)', new Error('reset')],
    ['without one (its socket closed short)', undefined],
  ])('a target that breaks mid-body %s cuts the client off and releases once, broken', async (_, err) => {
    const p = pair();
    p.res.write(Buffer.alloc(30, 1));
    await p.settled();
    p.res.destroy(err);
    await p.settled();
    expect(p.out.destroyed).toBe(true);
    expect(p.releases).toEqual([true]);
  });

  it('a client that leaves mid-body is no break of the target: released once, not broken', async () => {
    const p = pair();
    p.res.write(Buffer.alloc(30, 1));
    await p.settled();
    p.out.destroy();
    await p.settled();
    expect(p.res.destroyed).toBe(true);
    expect(p.releases).toEqual([false]);
  });
});
