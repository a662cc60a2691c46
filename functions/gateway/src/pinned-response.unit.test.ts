import { describe, expect, it } from 'vitest';
import { pinnedHeads } from './pinned-response.js';

const MAX = 65_536;
const b = (s: string) => Buffer.from(s, 'latin1');

describe('pinnedHeads: the target’s response heads on the pinned path, as the client gets them', () => {
  it('drops the target hop’s fields, keeps the rest in order and case, says Connection: close', () => {
    const head =
      'HTTP/1.1 200 OK\r\nConnection: keep-alive, X-Hop\r\nKeep-Alive: timeout=5\r\nX-Hop: secret\r\n' +
      'Content-Length: 4\r\nset-cookie:  a=1 \r\n\r\n';
    const r = pinnedHeads(b(`${head}body`), MAX, true);
    expect(r).toEqual({
      out: 'HTTP/1.1 200 OK\r\nContent-Length: 4\r\nset-cookie: a=1\r\nConnection: close\r\n\r\n',
      consumed: head.length,
      status: 200,
      done: true,
    });
  });

  it('interim heads go first, without closing, to an HTTP/1.1 client only; the final head follows', () => {
    const text = 'HTTP/1.1 103 Early Hints\r\nLink: </s.css>\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n';
    expect(pinnedHeads(b(text), MAX, true)).toEqual({
      out: 'HTTP/1.1 103 Early Hints\r\nLink: </s.css>\r\n\r\nHTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n',
      consumed: text.length,
      status: 204,
      done: true,
    });
    expect(pinnedHeads(b(text), MAX, false).out).toBe('HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n');
  });

  it('waits for a head that is not complete yet, after the interim heads that are', () => {
    expect(pinnedHeads(b('HTTP/1.1 2'), MAX, true)).toEqual({ out: '', consumed: 0, status: 0, done: false });
    expect(pinnedHeads(b('HTTP/1.1 200 OK\r\nA: b\r\n'), MAX, true).done).toBe(false);
    const interim = 'HTTP/1.1 100 Continue\r\n\r\n';
    expect(pinnedHeads(b(`${interim}HTTP/1.1 200 OK\r\n`), MAX, true)).toEqual({
      out: interim,
      consumed: interim.length,
      status: 0,
      done: false,
    });
    // Resuming the search where it stopped finds the same end.
    const whole = b('HTTP/1.1 200 OK\r\nA: b\r\n\r\n');
    expect(pinnedHeads(whole, MAX, true, whole.length - 5).status).toBe(200);
  });

  // Each is a 502 target_bad_response on the absolute-form path and /v1/fetch (Node's parser refuses it:
  // HPE_INVALID_CONSTANT, HPE_CR_EXPECTED, HPE_LF_EXPECTED, HPE_INVALID_HEADER_TOKEN, an upgrade).
  it.each([
    ['not HTTP', 'SSH-2.0-OpenSSH_9.6\r\n'],
    ['a head ended by bare LFs', 'HTTP/1.0 200 OK\nContent-Type: text/plain\n\nbare'],
    ['a bare CR in a field', 'HTTP/1.1 200 OK\r\nX-A: x\rY: z\r\n\r\n'],
    ['obs-fold', 'HTTP/1.1 200 OK\r\nX-A: x\r\n  folded\r\n\r\n'],
    ['a field name that is no token', 'HTTP/1.1 200 OK\r\nX A: b\r\n\r\n'],
    ['a 101 nobody asked for', 'HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\n'],
  ])('%s: a bad answer (status 0), nothing rewritten', (_, text) => {
    expect(pinnedHeads(b(text), MAX, true)).toEqual({ out: '', consumed: 0, status: 0, done: true });
    // After interim heads: those went out rewritten, then the bad one ends it.
    const interim = 'HTTP/1.1 100 Continue\r\n\r\n';
    expect(pinnedHeads(b(interim + text), MAX, true)).toEqual({
      out: interim,
      consumed: interim.length,
      status: 0,
      done: true,
    });
  });

  it('a head longer than the limit is a bad answer', () => {
    const long = b(`HTTP/1.1 200 OK\r\nX-Big: ${'x'.repeat(100)}`);
    expect(pinnedHeads(long, 64, true)).toEqual({ out: '', consumed: 0, status: 0, done: true });
    expect(pinnedHeads(long, MAX, true).done).toBe(false);
    // Complete in the read after the one that reached the limit: not parsed either, so what is parsed
    // stays within the limit, not up to twice it.
    const complete = b(`HTTP/1.1 200 OK\r\nX-Big: ${'x'.repeat(100)}\r\n\r\nbody`);
    expect(pinnedHeads(complete, 64, true)).toEqual({ out: '', consumed: 0, status: 0, done: true });
    expect(pinnedHeads(complete, MAX, true).out).toBe(
      `HTTP/1.1 200 OK\r\nX-Big: ${'x'.repeat(100)}\r\nConnection: close\r\n\r\n`,
    );
  });

  it('any three digits from 100 are a status, as Node’s parser takes them on the absolute-form path', () => {
    const head = 'HTTP/1.1 999 Request denied\r\nContent-Length: 2\r\n\r\n';
    expect(pinnedHeads(b(`${head}ok`), MAX, true)).toEqual({
      out: 'HTTP/1.1 999 Request denied\r\nContent-Length: 2\r\nConnection: close\r\n\r\n',
      consumed: head.length,
      status: 999,
      done: true,
    });
    expect(pinnedHeads(b('HTTP/1.1 099 Low\r\n\r\n'), MAX, true).status).toBe(0);
  });

  it('trims SP and HTAB around a value, and nothing else (VT, FF, NBSP are the value’s)', () => {
    const head = 'HTTP/1.1 204 No Content\r\nA: \t a  b \t\r\nB:\x0b v\xa0\r\nC:\r\nD:   \r\n\r\n';
    expect(pinnedHeads(b(head), MAX, true).out).toBe(
      'HTTP/1.1 204 No Content\r\nA: a  b\r\nB: \x0b v\xa0\r\nC: \r\nD: \r\nConnection: close\r\n\r\n',
    );
  });

  // A regex trim (/^[ \t]+|[ \t]+$/g) backtracked from every space of a run that does not end the value:
  // quadratic in the run: 3.9 s for a run of 60,000 spaces on Node 20 here, 42 s for this head's 200,000,
  // the event loop (every tunnel) held meanwhile. The loop is linear: this takes milliseconds, and the
  // test's default timeout (5 s) stands in for "not seconds" only as a guard against the quadratic form.
  it('a value of 200,000 spaces between two letters is read in linear time', () => {
    const spaces = ' '.repeat(200_000);
    const head = `HTTP/1.1 200 OK\r\nX: a${spaces}b\r\nY: ${spaces}\r\n\r\n`;
    const r = pinnedHeads(b(head), 2 * head.length, true);
    expect(r.status).toBe(200);
    expect(r.out).toBe(`HTTP/1.1 200 OK\r\nX: a${spaces}b\r\nY: \r\nConnection: close\r\n\r\n`);
  });
});
