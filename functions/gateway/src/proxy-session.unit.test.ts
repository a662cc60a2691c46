// ProxySession on a stand-in client socket: reading a request head that arrives in pieces (what the client
// is answered, and what reading the head cost in buffer allocations, counted, not timed); the sweep
// cutting a lingering session off an upstream it must let go; the redial's avoided proxy, and no redial
// from a stale snapshot during a drain; a redialled request counting one SUSPECT fallback, and a CONNECT
// tunnel's outcomes (a gateway in process, real loopback sockets).
import { EventEmitter } from 'node:events';
import net, { type AddressInfo } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { buildSnapshot } from '../../../shared/src/domain/gateway/canonical.js';
import { tallyOutcomes } from '../../../shared/src/domain/workers/outcomes.js';
import { passiveSignals } from '../../../shared/src/domain/workers/passive.js';
import { type GatewayProxy, sha256Hex } from '../../../shared/src/messages/gateway-snapshot.js';
import { gatewayClocks } from '../../../test/support/gateway-clocks.js';
import { staticSnapshotSource } from '../../../test/support/standalone-gateway.js';
import { ClientAuth } from './client-auth.js';
import { loadGatewayConfig } from './config.js';
import { CredentialCache, StaticCredentialResolver } from './credentials.js';
import { startGateway } from './gateway.js';
import { parseRequestHead } from './head.js';
import { jsonLogger } from './logger.js';
import type { ProxyContext } from './proxy-listener.js';
import { ProxySession } from './proxy-session.js';
import type { Owned } from './session-listeners.js';
import { GatewayWorker } from './worker.js';

function session(maxHeaderBytes: number) {
  const answers: string[] = [];
  const client = {
    writable: true,
    removeListener: () => client,
    on: () => client,
    pause: () => client,
    resume: () => client,
    destroy: () => {},
    end: (text: string) => {
      answers.push(text);
    },
  };
  const ctx = {
    opts: { maxHeaderBytes, headerTimeoutMs: 10_000, lingerMs: 1_000 },
    // Admission stops at the missing credentials (407): nothing past it is needed.
    auth: new ClientAuth([{ username: 'c', password: 's' }], []),
    recorder: { request: () => {} },
  } as unknown as ProxyContext;
  return { s: new ProxySession(client as unknown as Owned, ctx, 0), answers };
}

/** Feeds `text` in pieces of `size` bytes, one read each. */
function feed(s: ProxySession, text: string, size: number) {
  const bytes = Buffer.from(text, 'latin1');
  for (let i = 0; i < bytes.length; i += size) s.onHeadData(Buffer.from(bytes.subarray(i, i + size)));
}

/** Bytes allocated for buffers while `run` runs (Buffer.concat allocates through allocUnsafe). */
function allocatedBytes(run: () => void): number {
  const alloc = vi.spyOn(Buffer, 'allocUnsafe');
  const concat = vi.spyOn(Buffer, 'concat');
  run();
  let n = 0;
  for (const r of [...alloc.mock.results, ...concat.mock.results])
    if (r.type === 'return') n += (r.value as Buffer).length;
  return n;
}

const HEAD = (pad: number) =>
  `GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\nX-Pad: ${'a'.repeat(pad)}\r\n\r\n`;

afterEach(() => {
  vi.restoreAllMocks();
});

describe('ProxySession reading a head in pieces', () => {
  it('a head dribbled one byte per read costs linear copying, not a copy of everything per byte', async () => {
    const { s, answers } = session(16 * 1024);
    const head = HEAD(16 * 1024 - 100);
    expect(head.length).toBeLessThanOrEqual(16 * 1024);
    const bytes = allocatedBytes(() => feed(s, head, 1));
    // The whole head was read and parsed: no credentials, so 407 (a mangled one would be a 400).
    expect(answers).toHaveLength(1);
    expect(answers[0]).toMatch(/^HTTP\/1\.1 407 /);
    // Doubling room: at most about twice the head. A concat per read allocated ~n²/2 (134 MB here).
    expect(bytes).toBeLessThan(4 * head.length);
  });

  it.each([1, 2, 3, 5, 7, 64, 1000])('the same answer whatever the piece size (%i bytes)', (size) => {
    const { s, answers } = session(16 * 1024);
    feed(s, HEAD(500), size);
    expect(answers).toHaveLength(1);
    expect(answers[0]).toMatch(/^HTTP\/1\.1 407 /);
  });

  it('a bare LF split across reads is still a 400, and a head past the limit in pieces a 431', () => {
    const lf = session(16 * 1024);
    feed(lf.s, 'GET http://example.com/ HTTP/1.1\r\nX-A: a\nB: b\r\n\r\n', 3);
    expect(lf.answers[0]).toMatch(/^HTTP\/1\.1 400 /);
    const big = session(1024);
    feed(big.s, HEAD(2000), 100);
    expect(big.answers).toHaveLength(1);
    expect(big.answers[0]).toMatch(/^HTTP\/1\.1 431 /);
  });

  it('body bytes that came in the same read as the end of the head are kept', () => {
    const { s } = session(1024);
    feed(s, 'GET http://example.com/ HTTP/1.1\r\nContent-Length: 4\r\n', 5);
    s.onHeadData(Buffer.from('\r\nbody'));
    expect((s as unknown as { rest: Buffer | null }).rest?.toString()).toBe('body');
  });
});

// A session lingers once its side is done (the target's FIN, the answer's end), a pinned tunnel holding its
// upstream slot until the client closes (its client may still be sending its body up it). The sweep
// returned in the linger branch before its cut, so a drain past its bound or an ended grant cut every
// session on the proxy but these: the proxy stayed "draining, active 1" to the controller for as long as
// a slow reader kept the linger re-armed.
/** A session lingering with its slot held (load 2: counted active), its client still being written to. */
function lingering({ cut, grantOver, expired }: { cut: boolean; grantOver: boolean; expired?: string }) {
  let destroyed = 0;
  const client = {
    writableLength: 4096,
    destroy: () => {
      destroyed++;
    },
  };
  const ctx = {
    opts: { headerTimeoutMs: 10_000, lingerMs: 1_000, idleTimeoutMs: 300_000 },
    worker: { grantOver, expiredProxies: new Set(expired ? [expired] : []) },
  } as unknown as ProxyContext;
  const s = new ProxySession(client as unknown as Owned, ctx, 0);
  Object.assign(s, { lingerUntil: 500, load: 2, upstream: { name: 'p-1', live: { cut } } });
  return { s, destroyed: () => destroyed };
}

describe('ProxySession lingering on an upstream that must be let go', () => {
  it.each([
    ['its drain outlived GATEWAY_PROXY_DRAIN_TIMEOUT_MS', { cut: true, grantOver: false }, 1],
    ['the ownership grant is over', { cut: false, grantOver: true }, 1],
    [
      'its proxy is past its own hard expiry (expiresAt)',
      { cut: false, grantOver: false, expired: 'p-1' },
      1,
    ],
    ['(not: another proxy is past its hard expiry)', { cut: false, grantOver: false, expired: 'p-2' }, 0],
    ['(not: the upstream is still its own)', { cut: false, grantOver: false }, 0],
  ])('is cut when %s', (_, live, cuts) => {
    const { s, destroyed } = lingering(live);
    s.sweep(100);
    expect(destroyed()).toBe(cuts);
  });
});

// A proxy's expiresAt is its own hard expiry (contract seed §3), which nothing requires to be the
// snapshot's validUntil: the sweep cut sessions at the grant and at a drain's bound only, so a tunnel ran
// on through the proxy past its expiresAt for as long as the snapshot's grant lasted.
describe('ProxySession on a proxy past its own hard expiry', () => {
  it('is answered 503 upstream_withdrawn before any byte of the answer went out', () => {
    const ctx = {
      opts: { headerTimeoutMs: 10_000, lingerMs: 1_000, idleTimeoutMs: 300_000 },
      worker: { grantOver: false, expiredProxies: new Set(['p-1']) },
    } as unknown as ProxyContext;
    const s = new ProxySession({} as unknown as Owned, ctx, 0);
    const refused: unknown[][] = [];
    Object.assign(s, {
      load: 1,
      upstream: { name: 'p-1', live: { cut: false } },
      refuse: (...a: unknown[]) => refused.push(a),
    });
    s.sweep(100);
    expect(refused).toEqual([[503, 'upstream_withdrawn']]);
  });
});

// `pick` avoids the failed proxy by identity. A snapshot swapped in between the first pick and the refused
// dial compiles a new entry for the same proxy: avoiding the old object let the redial pick the dead proxy
// again, and the one retry was spent on it (/v1/fetch's redial already looked it up by name).
describe('ProxySession redialling after a refused dial', () => {
  it('asks pick to avoid the proxy that failed (pick matches it by name: pick.unit.test.ts)', () => {
    const failed = { name: 'p-1', live: { reserved: 1 } };
    const avoided: unknown[] = [];
    const ctx = {
      opts: { headerTimeoutMs: 10_000, lingerMs: 1_000 },
      worker: {
        refusalAfterLookup: () => null,
        pick: (_host: string, _at: number, _sticky: unknown, avoid: unknown) => {
          avoided.push(avoid);
          return { kind: 'none' };
        },
      },
    } as unknown as ProxyContext;
    const s = new ProxySession({} as unknown as Owned, ctx, 0);
    Object.assign(s, { upstream: failed, host: 'example.com' });
    expect((s as unknown as { redial: () => boolean }).redial()).toBe(false);
    expect(avoided).toEqual([failed]);
  });
});

// A drain serves what it admitted, a redial included, but never from a snapshot past its stale age: the
// rule a request whose look-up came back picks by (worker.ts refusalAfterLookup), /v1/fetch's too. The
// proxy listener redialled for any worker shutting down, from a snapshot however stale.
describe('ProxySession redialling while the worker shuts down', () => {
  it('does not pick from a snapshot that has outlived its stale age, its grant not over', async () => {
    let now = Date.now();
    const worker = new GatewayWorker({
      credentials: new CredentialCache(new StaticCredentialResolver(), 60_000, Date.now),
      log: jsonLogger('error', () => {}),
      ...gatewayClocks(() => now),
      maxStaleAgeMs: 1_000,
      stickyTableSize: 10,
      outcomeQueueSize: 10,
    });
    const later = new Date(now + 3_600_000).toISOString();
    const proxy = (name: string, port: number) =>
      ({
        name,
        host: '127.0.0.1',
        port,
        protocol: 'http',
        capacity: 5,
        expiresAt: later,
        usableUntil: later,
        attributes: {},
      }) as const;
    const snapshot = buildSnapshot(
      {
        schemaVersion: 1,
        version: 1,
        ownershipEpoch: 1,
        workerId: 'w1',
        generatedAt: new Date(now).toISOString(),
        validUntil: later,
        routing: [{ name: 'all', match: { hosts: ['*'] }, selector: {}, policy: 'round-robin' }],
        proxies: [proxy('a', 1), proxy('b', 2)],
      },
      sha256Hex,
    );
    expect(await worker.applySnapshot(snapshot)).toMatchObject({ ok: true });
    worker.beginShutdown();
    now += 5_000;
    expect(worker.grantOver).toBe(false);
    const redialed: string[] = [];
    const ctx = {
      opts: { headerTimeoutMs: 10_000, lingerMs: 1_000 },
      worker,
      recorder: { redialed: (l: string) => redialed.push(l) },
    } as unknown as ProxyContext;
    const s = new ProxySession({} as unknown as Owned, ctx, 0);
    const a = worker.snapshot()!.upstreams.get('a')!;
    a.live.reserved++;
    Object.assign(s, { upstream: a, load: 1, host: 'example.com' });
    expect((s as unknown as { redial: () => boolean }).redial()).toBe(false);
    expect(redialed).toEqual([]);
    expect(worker.totals()).toEqual({ active: 0, reserved: 1 });
  });
});

// A refused session's upstream is done with: its slot goes back with the refusal, not when the client
// closes after reading the answer. Held, the sweep's cut of sessions on an upstream being let go took the
// lingering refusal for a session still on it, and cut the answer 250 ms after writing it.
describe('ProxySession refusing while it holds an upstream slot', () => {
  it('gives the slot back at once, and the cut of the upstream leaves its answer to its linger', () => {
    let destroyed = 0;
    const answers: string[] = [];
    const client = {
      writable: true,
      writableLength: 64,
      removeListener: () => client,
      on: () => client,
      resume: () => client,
      end: (text: string) => {
        answers.push(text);
      },
      destroy: () => {
        destroyed++;
      },
    };
    const ctx = {
      opts: { headerTimeoutMs: 10_000, lingerMs: 1_000, idleTimeoutMs: 300_000 },
      worker: { grantOver: false, expiredProxies: new Set() },
      recorder: { request: () => {} },
    } as unknown as ProxyContext;
    const live = { active: 1, reserved: 0, cut: false };
    const s = new ProxySession(client as unknown as Owned, ctx, 0);
    Object.assign(s, { load: 2, upstream: { name: 'p-1', live } });
    s.refuse(503, 'upstream_withdrawn');
    expect(answers).toHaveLength(1);
    expect(live.active).toBe(0);
    live.cut = true;
    s.sweep(performance.now());
    expect(destroyed).toBe(0);
  });
});

// An absolute-form answer gives its slot back once its exchange is whole — but not while its tail is still
// queued for a slow reader: a SIGTERM drain that saw no slot on the upstream destroyed the client, and the
// tail with it.
describe('ProxySession after a whole absolute-form answer', () => {
  function done(writableLength: number) {
    const client = Object.assign(new EventEmitter(), { writableEnded: false, writableLength, end() {} });
    const ctx = { opts: { headerTimeoutMs: 10_000, lingerMs: 1_000 } } as unknown as ProxyContext;
    const s = new ProxySession(client as unknown as Owned, ctx, 0);
    const upstream = { live: { active: 1, reserved: 0 } };
    Object.assign(s, { load: 2, upstream, fwd: { settled: true } });
    s.forwardDone();
    return { client, upstream };
  }

  it('gives the slot back at once when nothing is left to write', () => {
    expect(done(0).upstream.live.active).toBe(0);
  });

  it('holds it while the tail is queued, and gives it back once written', () => {
    const { client, upstream } = done(16_384);
    expect(upstream.live.active).toBe(1);
    client.emit('finish');
    expect(upstream.live.active).toBe(0);
  });
});

// A retry's fresh dial that timed out (plain-forward.ts) has spent GATEWAY_UPSTREAM_TIMEOUT_MS already:
// answered, as a tunnel's timed-out dial is, not redialled; one refused is redialled as before.
describe('ProxySession.forwardFailed after a retry on a fresh connection', () => {
  it('does not redial a timed-out dial, and still redials a refused one', () => {
    const { s } = session(8192);
    const redial = vi.fn(() => true);
    const failStage = vi.fn();
    Object.assign(s, { fwd: { retried: true }, redial, failStage });
    s.forwardFailed('DIAL', 504, 'upstream_timeout');
    expect(redial).not.toHaveBeenCalled();
    expect(failStage).toHaveBeenCalledWith('DIAL', 504, 'upstream_timeout', undefined);
    s.forwardFailed('DIAL', 502, 'upstream_dial_failed');
    expect(redial).toHaveBeenCalledTimes(1);
    expect(failStage).toHaveBeenCalledTimes(1);
  });
});

// squid answers a CONNECT only once it has reached the target, and gives a target that drops SYNs a minute
// (connect_timeout), past the gateway's 10 s: a handshake timed out with the CONNECT sent is as ambiguous as
// a refusal (upstream-tunnel.ts evidenceStage), or any client could fail a proxy by asking it for a dead host.
// A SOCKS5 handshake's own timer (socks5-handshake.ts) knows how far it got, and answers at the deadline:
// the sweep only backs it up, a second later.
describe('ProxySession: a handshake past its deadline', () => {
  it.each([
    ['an http upstream (its CONNECT sent, not a byte answered)', {}, null, 100, 'RESPONSE_HEADERS'],
    [
      'an http upstream whose answer began and stalled',
      {},
      Buffer.from('HTTP/1.1 2'),
      100,
      'PROXY_HANDSHAKE',
    ],
    ['a SOCKS5 upstream whose own timer never fired', { socks5: {} }, null, 1050, 'PROXY_HANDSHAKE'],
  ])(
    'on %s is failed by the sweep at %s ms, reported at %s, answered 504 upstream_timeout',
    (_, auth, buf, at, stage) => {
      const ctx = {
        opts: { headerTimeoutMs: 10_000, lingerMs: 1_000, idleTimeoutMs: 300_000 },
        worker: { grantOver: false, expiredProxies: new Set() },
      } as unknown as ProxyContext;
      const s = new ProxySession({} as unknown as Owned, ctx, 0);
      const failed: unknown[][] = [];
      Object.assign(s, {
        state: 3, // HANDSHAKE
        deadline: 50,
        buf,
        upstream: { name: 'p-1', live: { cut: false }, auth: { line: '', ...auth } },
        failStage: (...a: unknown[]) => failed.push(a),
      });
      s.sweep(40);
      expect(failed).toEqual([]);
      s.sweep(at - 1);
      if (at > 100) expect(failed).toEqual([]);
      s.sweep(at);
      expect(failed.at(-1)).toEqual([stage, 504, 'upstream_timeout']);
    },
  );
});

describe('ProxySession.stickyValue', () => {
  it('keys a header’s value by the client user: the same session value of two users is two keys', () => {
    const keyOf = (user: string) => {
      const { s } = session(8192);
      Object.assign(s, {
        user,
        head: parseRequestHead('CONNECT a:443 HTTP/1.1\r\nX-Session: bob-42'),
      });
      return s.stickyValue({ header: 'x-session' });
    };
    expect(keyOf('bob')).not.toBe(keyOf('mallory'));
    expect(keyOf('bob')).toBe(keyOf('bob'));
    expect(keyOf('bob')).toContain('bob-42');
  });

  it('an empty header value is no key: the request falls back to least-active, as one without the header', () => {
    const { s } = session(8192);
    Object.assign(s, { user: 'bob', head: parseRequestHead('CONNECT a:443 HTTP/1.1\r\nX-Session: ') });
    expect(s.stickyValue({ header: 'x-session' })).toBeUndefined();
  });
});

/**
 * A gateway in process on loopback (admin and proxy listeners on free ports, no client auth) serving one
 * snapshot, its proxies on 127.0.0.1 and usable for the hour, routed round-robin from the first; `resolve`
 * is its DNS (never dialled here: only named in the CONNECT the upstream answers).
 */
async function gatewayOver(
  proxies: Pick<GatewayProxy, 'name' | 'port' | 'protocol' | 'capacity' | 'suspect'>[],
  resolve: (host: string) => Promise<string[]>,
) {
  const t = Date.now();
  const later = new Date(t + 3_600_000).toISOString();
  const given = buildSnapshot(
    {
      schemaVersion: 1,
      version: 1,
      ownershipEpoch: 1,
      workerId: 'w1',
      generatedAt: new Date(t).toISOString(),
      validUntil: new Date(t + 600_000).toISOString(),
      routing: [{ name: 'all', match: { hosts: ['*'] }, selector: {}, policy: 'round-robin' }],
      proxies: proxies.map((p) => ({
        ...p,
        host: '127.0.0.1',
        expiresAt: later,
        usableUntil: later,
        attributes: {},
      })),
    },
    sha256Hex,
  );
  const cfg = loadGatewayConfig([], {
    GATEWAY_CLIENT_AUTH: 'none',
    HOST: '127.0.0.1',
    PORT: '0',
    GATEWAY_PROXY_PORT: '0',
    GATEWAY_DRAIN_TIMEOUT_MS: '0',
  });
  return startGateway(cfg, {
    log: jsonLogger('error', () => {}),
    version: 't',
    workerId: 'w1',
    source: staticSnapshotSource(given),
    reporter: { start: () => {}, stop: async () => {} },
    resolve,
  });
}

// gateway_suspect_fallbacks_total counts requests sent to a SUSPECT upstream (docs/gateway.md § Metrics),
// and an alert divides it by requests: a request the listener redials counts once. Each pick counted, so
// one CONNECT redialled between suspect proxies counted 2, exactly when SUSPECT proxies fail.
describe('ProxySession redialling onto a SUSPECT upstream', () => {
  /** Answers a CONNECT and closes; a port nobody listens on; a gateway with the two proxies, round-robin. */
  async function connectThrough(suspect: { dead: boolean; live: boolean }) {
    const live = net.createServer((c) => {
      c.on('error', () => {});
      c.once('data', () => c.end('HTTP/1.1 200 Connection established\r\n\r\n'));
    });
    await new Promise<void>((r) => live.listen(0, '127.0.0.1', r));
    const dead = net.createServer();
    await new Promise<void>((r) => dead.listen(0, '127.0.0.1', r));
    const deadPort = (dead.address() as AddressInfo).port;
    await new Promise((r) => dead.close(r));
    const livePort = (live.address() as AddressInfo).port;
    // Round-robin from the first: the dead proxy is tried first.
    const gw = await gatewayOver(
      [
        { name: 'a-dead', port: deadPort, protocol: 'http', capacity: 5, suspect: suspect.dead },
        { name: 'b-live', port: livePort, protocol: 'http', capacity: 5, suspect: suspect.live },
      ],
      async () => ['8.8.8.8'],
    );
    try {
      const answer = await new Promise<string>((resolve, reject) => {
        const c = net.connect(gw.proxyPort!, '127.0.0.1');
        let got = '';
        c.on('error', reject);
        c.on('data', (b) => {
          got += b.toString('latin1');
          if (got.includes('\r\n\r\n')) {
            c.destroy();
            resolve(got);
          }
        });
        c.on('close', () => resolve(got));
        c.write('CONNECT site.example:443 HTTP/1.1\r\nHost: site.example:443\r\n\r\n');
      });
      const outcomes = gw.worker.takeOutcomes(10).map((o) => `${o.proxy} ${o.stage} ${o.ok}`);
      return { answer, outcomes, fallbacks: gw.worker.suspectFallbacks };
    } finally {
      await gw.shutdown();
      await new Promise((r) => live.close(r));
    }
  }

  it('a CONNECT whose SUSPECT fallback refused the dial, redialled to another, counts one fallback', async () => {
    const r = await connectThrough({ dead: true, live: true });
    expect(r.answer).toMatch(/^HTTP\/1\.1 200 /);
    expect(r.outcomes).toContain('a-dead DIAL false');
    expect(r.fallbacks).toBe(1);
  });

  it('a CONNECT whose sound proxy refused the dial, redialled to a SUSPECT one, counts one fallback', async () => {
    // The sound proxy is avoided for the redial (its dial refused): going past it to the suspect one is a
    // fallback, though the sound one is still usable for other requests.
    const r = await connectThrough({ dead: false, live: true });
    expect(r.answer).toMatch(/^HTTP\/1\.1 200 /);
    expect(r.outcomes).toContain('a-dead DIAL false');
    expect(r.fallbacks).toBe(1);
  });
});

// A CONNECT tunnel's outcome is its TUNNEL success once it is established, as a plain-HTTP answer's is
// once its head is in (docs/gateway.md § Proxy listener). Reported when the tunnel closed, a crawler's
// tunnels held for minutes left only that minute's target refusals (a dead site's 502s) in the passive
// window: ok 0, failure ratio 1, and a healthy proxy went UNHEALTHY with its working tunnels cut.
describe('ProxySession reporting a CONNECT tunnel', () => {
  /**
   * A gateway with one proxy p1 on a stand-in upstream (http or SOCKS5): a CONNECT to `down.example`
   * (resolved to 2.2.2.2) is refused with 502, any other is established and kept open, its upstream side
   * in `held` for the test to reset.
   */
  async function tunnelGateway(protocol: 'http' | 'socks5') {
    const held: net.Socket[] = [];
    const up = net.createServer((s) => {
      s.on('error', () => {});
      if (protocol === 'http') {
        s.once('data', (b) => {
          if (b.toString('latin1').startsWith('CONNECT 2.2.2.2:'))
            s.end('HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n');
          else {
            held.push(s);
            s.write('HTTP/1.1 200 Connection established\r\n\r\n');
          }
        });
        return;
      }
      // SOCKS5, no authentication: the greeting, then a CONNECT to an IPv4 address, answered granted.
      s.once('data', () => {
        s.write(Buffer.from([5, 0]));
        s.once('data', () => {
          held.push(s);
          s.write(Buffer.from([5, 0, 0, 1, 0, 0, 0, 0, 0, 0]));
        });
      });
    });
    await new Promise<void>((r) => up.listen(0, '127.0.0.1', r));
    const gw = await gatewayOver(
      [{ name: 'p1', port: (up.address() as AddressInfo).port, protocol, capacity: 50, suspect: false }],
      async (h) => [h.startsWith('down') ? '2.2.2.2' : '8.8.8.8'],
    );
    /** A CONNECT through the gateway: its answer's status line, and the client's socket, left open. */
    const connect = (host: string) =>
      new Promise<{ answer: string; c: net.Socket }>((resolve, reject) => {
        const c = net.connect(gw.proxyPort!, '127.0.0.1');
        let got = '';
        c.on('error', reject);
        c.on('data', (b) => {
          got += b.toString('latin1');
          if (got.includes('\r\n\r\n')) resolve({ answer: got.split('\r\n')[0]!, c });
        });
        c.write(`CONNECT ${host}:443 HTTP/1.1\r\nHost: ${host}:443\r\n\r\n`);
      });
    const outcomes = () => gw.worker.takeOutcomes(100).map((o) => `${o.proxy} ${o.stage} ${o.ok}`);
    const close = async () => {
      await gw.shutdown();
      for (const s of held) s.destroy();
      await new Promise((r) => up.close(r));
    };
    return { gw, held, connect, outcomes, close };
  }

  /** Until `c` has closed (how: 'close' after a clean end, or the error's code). */
  const closed = (c: net.Socket) =>
    new Promise<string>((r) => {
      let how = 'close';
      c.removeAllListeners('error');
      c.on('error', (e: NodeJS.ErrnoException) => {
        how = e.code ?? 'error';
      });
      if (c.destroyed) r(how);
      else c.once('close', () => r(how));
    });

  /** Outcomes are recorded as events run: a moment for the gateway's side of a close to be handled. */
  const settle = () => new Promise((r) => setTimeout(r, 50));

  it.each(['http', 'socks5'] as const)(
    '%s upstream: the success is reported while the tunnel is open, and its client closing adds nothing',
    async (protocol) => {
      const g = await tunnelGateway(protocol);
      try {
        const { answer, c } = await g.connect('good.example');
        expect(answer).toMatch(/^HTTP\/1\.1 200 /);
        await settle();
        const open = g.gw.worker.takeOutcomes(10);
        expect(open.map((o) => `${o.proxy} ${o.stage} ${o.ok}`)).toEqual(['p1 TUNNEL true']);
        // The handshake's latency (docs/gateway.md § Proxy listener), not the tunnel's lifetime.
        expect(open[0]!.latencyMs).toBeLessThan(1_000);
        const done = closed(c);
        c.destroy();
        await done;
        await settle();
        expect(g.outcomes()).toEqual([]);
      } finally {
        await g.close();
      }
    },
  );

  it('an upstream that resets mid-way adds a TUNNEL failure, mirrored to the client as a reset', async () => {
    const g = await tunnelGateway('http');
    try {
      const { c } = await g.connect('good.example');
      const done = closed(c);
      g.held[0]!.resetAndDestroy();
      expect(await done).toBe('ECONNRESET');
      await settle();
      // One request, two outcomes: its success, then the break — as a plain-HTTP answer cut after its head.
      expect(g.outcomes()).toEqual(['p1 TUNNEL true', 'p1 TUNNEL false']);
    } finally {
      await g.close();
    }
  });

  it('long-lived tunnels to a sound site outweigh a dead site’s refusals in the same window', async () => {
    const g = await tunnelGateway('http');
    try {
      const open = await Promise.all([1, 2, 3].map(() => g.connect('good.example')));
      for (let i = 0; i < 5; i++) {
        const { answer, c } = await g.connect('down.example');
        expect(answer).toMatch(/^HTTP\/1\.1 502 /);
        c.destroy();
      }
      await settle();
      const window = g.gw.worker.takeOutcomes(100);
      const { tallies } = tallyOutcomes(window, () => true);
      const [signal] = passiveSignals([{ workerId: 'w1', tallies }]).signals;
      expect(signal).toMatchObject({ proxy: 'p1', ok: true, samples: 8 });
      for (const o of open) o.c.destroy();
    } finally {
      await g.close();
    }
  });
});
