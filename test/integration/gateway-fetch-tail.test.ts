// A /v1/fetch answer's slot goes back once its tail has left for the client, not when the target's last
// byte came in (stream-body.ts): released with the tail still queued, a SIGTERM drain saw nothing in
// flight and destroyed the client with it unsent — a truncated body counted ok. Fetches pipelined on one
// connection run one at a time (http-app.ts): the one behind waits until the answer before it has left,
// so its own answer is never queued behind another's (that queued tail, and its cut at the fetch's
// deadline, are stream-body.unit.test.ts's), and a client that leaves gives the one slot back at once. The
// scripted upstream holds the first answer half sent. Both plain-HTTP paths: absolute form, and pinned
// through a CONNECT tunnel. A gateway in process.
import net, { type AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayHandle } from '../../functions/gateway/src/gateway.js';
import { pollUntil } from '../support/poll.js';
import { startTwoPathGateway, twoPathSnapshot } from '../support/two-path-gateway.js';

const HELD = Buffer.alloc(200_000, 0x68);
const SMALL = Buffer.from(Array.from({ length: 30_000 }, (_, i) => (i * 7) % 256));
const HOSTS = { absolute: '127.0.0.7', pinned: '127.0.0.8' } as const;

/**
 * A forward proxy that answers every request itself — in absolute form, or in origin form inside a
 * CONNECT tunnel to itself: /held with half of HELD until `release()`, anything else with SMALL and a
 * close. `asked` counts the requests for anything but /held.
 */
function scriptedUpstream() {
  const sockets = new Set<net.Socket>();
  /** The /held answer waiting for its second half, while its connection lasts. */
  let held: { rest: () => void } | null = null;
  const state = { asked: 0 };
  const server = net.createServer((s) => {
    sockets.add(s);
    s.on('error', () => {});
    let buf = Buffer.alloc(0);
    s.on('data', (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) return;
      const head = buf.toString('latin1', 0, end);
      buf = buf.subarray(end + 4);
      if (head.startsWith('CONNECT ')) {
        s.write('HTTP/1.1 200 Connection established\r\n\r\n');
        return;
      }
      const ok = (length: number) =>
        `HTTP/1.1 200 OK\r\nContent-Length: ${length}\r\nConnection: close\r\n\r\n`;
      if (head.split(' ')[1]!.endsWith('/held')) {
        const half = HELD.length / 2;
        s.write(ok(HELD.length));
        s.write(HELD.subarray(0, half));
        const pending = { rest: () => s.end(HELD.subarray(half)) };
        held = pending;
        s.once('close', () => {
          if (held === pending) held = null;
        });
        return;
      }
      state.asked++;
      s.write(ok(SMALL.length));
      s.end(SMALL);
    });
  });
  return {
    state,
    listen: () =>
      new Promise<number>((r) =>
        server.listen(0, '127.0.0.1', () => r((server.address() as AddressInfo).port)),
      ),
    /**
     * Sends the rest of the held answer once its request has come: a fetch holds its slot before the
     * gateway dials, so "one in flight" can come first — released then, a loaded run released nothing
     * (an earlier answer's closure) and the held one waited out the fetch's 30 s deadline, cut short.
     */
    release: async () => {
      const h = await pollUntil(
        () => held,
        (x) => x !== null,
        10_000,
        'the held request at the upstream',
      );
      held = null;
      h!.rest();
    },
    /** The rest of a held answer if one is waiting (cleanup: the fetch may never have reached us). */
    releaseAny: () => {
      const h = held;
      held = null;
      h?.rest();
    },
    close: () => {
      for (const s of sockets) s.destroy();
      return new Promise((r) => server.close(r));
    },
  };
}

/** The chunked answers in `raw`, in order: each body as far as it came, and whether its last chunk did. */
function answers(raw: Buffer): { status: number; body: Buffer; complete: boolean }[] {
  const out: { status: number; body: Buffer; complete: boolean }[] = [];
  let at = 0;
  while (at < raw.length) {
    const end = raw.indexOf('\r\n\r\n', at);
    if (end < 0) break;
    const status = Number(raw.toString('latin1', at + 9, at + 12));
    const parts: Buffer[] = [];
    let p = end + 4;
    let complete = false;
    for (;;) {
      const line = raw.indexOf('\r\n', p);
      if (line < 0) break;
      const size = Number.parseInt(raw.toString('latin1', p, line), 16);
      if (size === 0) {
        complete = true;
        p = line + 4;
        break;
      }
      parts.push(raw.subarray(line + 2, Math.min(line + 2 + size, raw.length)));
      p = line + 2 + size + 2;
      if (p > raw.length) break;
    }
    out.push({ status, body: Buffer.concat(parts), complete });
    at = p;
  }
  return out;
}

/**
 * /v1/fetch requests pipelined on one connection, read as they come; `answers` once it closes, and the
 * client's socket.
 */
function pipelinedOn(port: number, requests: object[]) {
  const s = net.connect({ port, host: '127.0.0.1' });
  const chunks: Buffer[] = [];
  s.on('data', (c: Buffer) => chunks.push(c));
  s.on('error', () => {});
  for (const [i, r] of requests.entries()) {
    const body = JSON.stringify(r);
    const close = i === requests.length - 1 ? 'Connection: close\r\n' : '';
    s.write(
      `POST /v1/fetch HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\n${close}` +
        `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
  }
  const got = new Promise<ReturnType<typeof answers>>((r) =>
    s.once('close', () => r(answers(Buffer.concat(chunks)))),
  );
  return { socket: s, got };
}

const pipelined = (port: number, requests: object[]) => pipelinedOn(port, requests).got;

describe('a /v1/fetch answer still queued for the client', () => {
  const upstream = scriptedUpstream();
  let file: string;
  let gw: GatewayHandle | undefined;

  beforeAll(async () => {
    const port = await upstream.listen();
    file = twoPathSnapshot(port, HOSTS);
  });

  // A test that failed half-way leaves neither its gateway nor its held answer to the next one.
  afterEach(async () => {
    upstream.releaseAny();
    await gw?.shutdown();
    gw = undefined;
  });

  afterAll(async () => {
    await upstream.close();
  });

  async function start() {
    gw = await startTwoPathGateway(file, HOSTS, { env: { GATEWAY_DRAIN_TIMEOUT_MS: '20000' } });
    return gw;
  }

  const inFlight = (g: GatewayHandle) => {
    const t = g.worker.totals();
    return t.active + t.reserved;
  };
  /** Polls (3 s at most) until `n` fetches hold a slot. */
  const untilInFlight = (g: GatewayHandle, n: number, what: string) =>
    pollUntil(
      () => inFlight(g),
      (v) => v === n,
      3_000,
      what,
    );

  it.each(['absolute', 'pinned'] as const)(
    '%s: the slot is held until the answer has left, and a SIGTERM drain waits for it',
    async (path) => {
      const g = await start();
      const got = pipelined(g.httpPort, [{ url: `http://${HOSTS[path]}/held` }]);
      await untilInFlight(g, 1, 'the fetch under way');
      const shut = g.shutdown();
      // Several of the drain's 50 ms polls.
      await new Promise((r) => setTimeout(r, 300));
      expect(inFlight(g)).toBe(1);
      await upstream.release();
      const [first] = await got;
      await shut;
      expect(first).toMatchObject({ status: 200, complete: true });
      expect(first!.body.equals(HELD)).toBe(true);
      expect(inFlight(g)).toBe(0);
      gw = undefined;
    },
  );

  it.each(['absolute', 'pinned'] as const)(
    '%s: a fetch pipelined behind another starts once that answer has left: one slot at a time',
    async (path) => {
      const g = await start();
      const asked = upstream.state.asked;
      const got = pipelined(g.httpPort, [
        { url: `http://${HOSTS[path]}/held` },
        { url: `http://${HOSTS[path]}/small` },
      ]);
      await untilInFlight(g, 1, 'the first fetch under way');
      await new Promise((r) => setTimeout(r, 300));
      // The second waits: no slot, and its target not asked.
      expect(inFlight(g)).toBe(1);
      expect(upstream.state.asked).toBe(asked);
      await upstream.release();
      const [first, second] = await got;
      expect(first).toMatchObject({ status: 200, complete: true });
      expect(first!.body.equals(HELD)).toBe(true);
      expect(second).toMatchObject({ status: 200, complete: true });
      expect(second!.body.equals(SMALL)).toBe(true);
      await untilInFlight(g, 0, 'both slots back');
      await g.shutdown();
      gw = undefined;
    },
  );

  it.each(['absolute', 'pinned'] as const)(
    '%s: a head alone (HEAD) behind another waits its turn too, and its slot goes back once it has left',
    async (path) => {
      const g = await start();
      const got = pipelined(g.httpPort, [
        { url: `http://${HOSTS[path]}/held` },
        { url: `http://${HOSTS[path]}/small`, method: 'HEAD' },
      ]);
      await untilInFlight(g, 1, 'the first fetch under way');
      await upstream.release();
      const [first, second] = await got;
      expect(first).toMatchObject({ status: 200, complete: true });
      expect(second?.status).toBe(200);
      await untilInFlight(g, 0, 'both slots back');
      await g.shutdown();
      gw = undefined;
    },
  );

  it.each(['absolute', 'pinned'] as const)(
    '%s: a client that leaves with a fetch waiting behind another gives the slot back at once, and the waiting one never starts',
    async (path) => {
      const g = await start();
      const asked = upstream.state.asked;
      // The default deadline (30 s): only the client's leaving can give the slot back within the poll.
      const { socket } = pipelinedOn(g.httpPort, [
        { url: `http://${HOSTS[path]}/held` },
        { url: `http://${HOSTS[path]}/small` },
      ]);
      await untilInFlight(g, 1, 'the first fetch under way');
      socket.destroy();
      await untilInFlight(g, 0, 'the slot back once the client left');
      await new Promise((r) => setTimeout(r, 200));
      expect(upstream.state.asked).toBe(asked);
      expect(inFlight(g)).toBe(0);
      upstream.releaseAny();
      await g.shutdown();
      gw = undefined;
    },
  );

  it.each(['absolute', 'pinned'] as const)(
    '%s: a fetch waiting behind another has its deadline from its turn, when its request is read',
    async (path) => {
      const g = await start();
      const got = pipelined(g.httpPort, [
        { url: `http://${HOSTS[path]}/held` },
        { url: `http://${HOSTS[path]}/small`, timeoutMs: 2_000 },
      ]);
      await untilInFlight(g, 1, 'the first fetch under way');
      // Past the second's timeoutMs, counted from its arrival. (2 s, not 500 ms: its own dial (and CONNECT,
      // pinned) and answer must fit in it on a loaded box.)
      await new Promise((r) => setTimeout(r, 2_200));
      await upstream.release();
      const [first, second] = await got;
      expect(first).toMatchObject({ status: 200, complete: true });
      expect(second).toMatchObject({ status: 200, complete: true });
      expect(second!.body.equals(SMALL)).toBe(true);
      await g.shutdown();
      gw = undefined;
    },
  );
});
