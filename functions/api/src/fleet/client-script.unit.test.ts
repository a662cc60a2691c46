// The fleet page's browser script (FLEET_JS) run in a node:vm context with the few browser pieces it
// touches faked: what it does when its EventSource is closed for good (any answer but 200, e.g. the
// stream cap's 503 on the reconnect after Cloud Run's request timeout ended the stream).
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { FLEET_JS } from './client-script.js';

const CONNECTING = 0;
const CLOSED = 2;

class FakeEventSource {
  static CONNECTING = CONNECTING;
  static OPEN = 1;
  static CLOSED = CLOSED;
  readyState = CONNECTING;
  onerror: (() => void) | null = null;
  onopen: (() => void) | null = null;
  constructor(readonly url: string) {}
  addEventListener() {}
  close() {
    this.readyState = CLOSED;
  }
}

/** Runs the script; `probe` answers its fetches (status, Retry-After). */
function page(probe: () => { status: number; retryAfter?: string }) {
  const sources: FakeEventSource[] = [];
  const timers: { fn: () => void; ms: number }[] = [];
  const fetches: { url: string; method?: string }[] = [];
  const live = { state: '', text: '' };
  const element = () => ({
    addEventListener() {},
    setAttribute(name: string, value: string) {
      if (name === 'data-state') live.state = value;
    },
    set textContent(t: string) {
      live.text = t;
    },
  });
  const location = { href: '/fleet' };
  const sandbox: Record<string, unknown> = {
    document: { getElementById: element, addEventListener() {} },
    EventSource: class extends FakeEventSource {
      constructor(url: string) {
        super(url);
        sources.push(this);
      }
    },
    fetch: (url: string, init?: { method?: string }) => {
      fetches.push({ url, method: init?.method });
      const { status, retryAfter } = probe();
      return Promise.resolve({
        status,
        ok: status >= 200 && status < 300,
        headers: { get: (h: string) => (h.toLowerCase() === 'retry-after' ? (retryAfter ?? null) : null) },
      });
    },
    setTimeout: (fn: () => void, ms: number) => timers.push({ fn, ms }),
    setInterval: () => {
      throw new Error('the polling fallback is for browsers without EventSource');
    },
    location,
  };
  sandbox.window = sandbox;
  runInNewContext(FLEET_JS, sandbox);
  /** The current stream is refused for good: readyState CLOSED, then onerror, as a browser does. */
  const refuse = async () => {
    const es = sources.at(-1)!;
    es.readyState = CLOSED;
    es.onerror?.();
    await new Promise((r) => setImmediate(r));
  };
  /** Runs the timers set so far, in order. */
  const runTimers = () => {
    for (const t of timers.splice(0)) t.fn();
  };
  return { sources, timers, fetches, live, location, refuse, runTimers };
}

describe('FLEET_JS after its event stream is refused', () => {
  it('a 503 with Retry-After: 1 opens a new stream after a delay of at least that, at most 60 s', async () => {
    const p = page(() => ({ status: 503, retryAfter: '1' }));
    expect(p.sources.map((s) => s.url)).toEqual(['/fleet/events']);
    await p.refuse();
    // A HEAD of the stream: it holds no stream slot and builds no view.
    expect(p.fetches).toEqual([{ url: '/fleet/events', method: 'HEAD' }]);
    expect(p.live.state).toBe('reconnecting');
    expect(p.timers).toHaveLength(1);
    expect(p.timers[0]!.ms).toBeGreaterThanOrEqual(1000);
    expect(p.timers[0]!.ms).toBeLessThanOrEqual(60_000);
    expect(p.sources).toHaveLength(1); // not before the wait
    p.runTimers();
    expect(p.sources.map((s) => s.url)).toEqual(['/fleet/events', '/fleet/events']);
  });

  it('a probe answered 200 (the cap and the view load are not checked on a HEAD) retries too, backing off', async () => {
    const p = page(() => ({ status: 200 }));
    const waits: number[] = [];
    for (let i = 0; i < 4; i++) {
      await p.refuse();
      waits.push(p.timers[0]!.ms);
      p.runTimers();
    }
    expect(p.sources).toHaveLength(5);
    for (let i = 1; i < waits.length; i++) expect(waits[i]!).toBeGreaterThan(waits[i - 1]!);
    expect(Math.max(...waits)).toBeLessThanOrEqual(60_000);
  });

  it('a Retry-After beyond 60 s is waited 60 s at most', async () => {
    const p = page(() => ({ status: 429, retryAfter: '3600' }));
    await p.refuse();
    expect(p.timers[0]!.ms).toBe(60_000);
  });

  it('gives up after a bounded number of attempts and says to reload; an opened stream starts the count again', async () => {
    const p = page(() => ({ status: 503, retryAfter: '5' }));
    // One open stream in between resets the count: the next run of refusals gets every attempt again.
    await p.refuse();
    p.runTimers();
    p.sources.at(-1)!.onopen?.();
    let attempts = 0;
    for (; attempts < 50; attempts++) {
      await p.refuse();
      if (!p.timers.length) break;
      p.runTimers();
    }
    expect(attempts).toBe(8);
    expect(p.live).toEqual({ state: 'down', text: 'disconnected: reload the page' });
  });

  it.each([401, 403])('a %i goes to the login form once, without opening another stream', async (status) => {
    const p = page(() => ({ status }));
    await p.refuse();
    expect(p.location.href).toBe('/fleet/login');
    expect(p.timers).toHaveLength(0);
    expect(p.sources).toHaveLength(1);
    expect(p.fetches).toHaveLength(1);
  });

  it('any other answer shows disconnected, as before', async () => {
    const p = page(() => ({ status: 404 }));
    await p.refuse();
    expect(p.live).toEqual({ state: 'down', text: 'disconnected: reload the page' });
    expect(p.timers).toHaveLength(0);
    expect(p.location.href).toBe('/fleet');
  });

  it('a dropped stream the browser reconnects itself (CONNECTING) is left to it', async () => {
    const p = page(() => ({ status: 200 }));
    p.sources[0]!.onerror?.();
    await new Promise((r) => setImmediate(r));
    expect(p.fetches).toHaveLength(0);
    expect(p.live).toEqual({ state: 'reconnecting', text: 'reconnecting\u2026' });
  });
});
