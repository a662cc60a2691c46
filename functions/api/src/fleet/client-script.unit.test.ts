// The fleet page's browser script (FLEET_JS) run in a node:vm context with the few browser pieces it
// touches faked: what it does when its EventSource is closed for good (any answer but 200, e.g. the
// stream cap's 503 on the reconnect after Cloud Run's request timeout ended the stream).
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { FLEET_JS } from './client-script.js';
import { rowHtml } from './page.js';
import { NOW, twoProxies } from './testing/fleet-fixtures.js';
import { buildFleetView } from './view-model.js';

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
  addEventListener(_type: string, _fn: (ev: { data: string }) => void) {}
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

/** A DOM element as far as the script's rendering uses it: text, class, attributes, children, listeners. */
class FakeElement {
  className = '';
  textContent = '';
  title = '';
  href = '';
  colSpan = 0;
  hidden = true;
  readonly attributes = new Map<string, string>();
  readonly childNodes: unknown[] = [];
  readonly listeners = new Map<string, (ev: unknown) => void>();
  constructor(readonly tagName = 'div') {}
  setAttribute(name: string, value: unknown) {
    this.attributes.set(name, String(value));
  }
  getAttribute(name: string) {
    return this.attributes.get(name) ?? null;
  }
  appendChild(c: unknown) {
    this.childNodes.push(c);
    return c;
  }
  replaceChildren(...c: unknown[]) {
    this.childNodes.splice(0, this.childNodes.length, ...c);
  }
  addEventListener(type: string, fn: (ev: unknown) => void) {
    this.listeners.set(type, fn);
  }
  querySelectorAll() {
    return [];
  }
}

/** Runs the script with a fake DOM; `answer` answers each fetch of a proxy's detail (status, body). */
function pageWithDom(answer: (url: string) => { status: number; body?: unknown }) {
  const elements = new Map<string, FakeElement>();
  const byId = (id: string) => {
    if (!elements.has(id)) elements.set(id, new FakeElement());
    return elements.get(id)!;
  };
  let onFleet: ((ev: { data: string }) => void) | undefined;
  const fetches: string[] = [];
  const sandbox: Record<string, unknown> = {
    document: {
      getElementById: byId,
      addEventListener() {},
      createElement: (tag: string) => new FakeElement(tag),
      createElementNS: (_ns: string, tag: string) => new FakeElement(tag),
      createTextNode: (text: string) => ({ text }),
      createDocumentFragment: () => new FakeElement('#fragment'),
    },
    EventSource: class extends FakeEventSource {
      override addEventListener(type: string, fn: (ev: { data: string }) => void) {
        if (type === 'fleet') onFleet = fn;
      }
    },
    fetch: (url: string) => {
      fetches.push(url);
      const { status, body } = answer(url);
      return Promise.resolve({
        status,
        ok: status >= 200 && status < 300,
        json: () => Promise.resolve(body),
        headers: { get: () => null },
      });
    },
    setTimeout: () => {},
    setInterval: () => {},
    location: { href: '/fleet' },
  };
  sandbox.window = sandbox;
  runInNewContext(FLEET_JS, sandbox);
  const settle = () => new Promise((r) => setTimeout(r, 0));
  /** A click on the row of `name`: opens its detail. */
  const open = async (name: string) => {
    const tr = new FakeElement('tr');
    tr.setAttribute('data-name', name);
    byId('fleet-body').listeners.get('click')!({ target: { closest: () => tr }, preventDefault() {} });
    await settle();
  };
  /** A live update of the table (an SSE "fleet" event). */
  const update = async (rows: unknown[] = []) => {
    onFleet!({ data: JSON.stringify({ generatedAt: '2026-02-01T12:00:00Z', rows, phases: {}, jobs: [] }) });
    await settle();
  };
  /** The rendered rows: the table body's fragment's children. */
  const rows = () => (byId('fleet-body').childNodes[0] as FakeElement).childNodes as FakeElement[];
  return { detail: byId('detail'), fetches, open, update, rows };
}

describe('FLEET_JS with a proxy’s detail open', () => {
  /** p-1's row, as a live update lists it. */
  const LISTED = { ...buildFleetView(twoProxies().inputs(), NOW).rows[0]!, name: 'p-1' };
  const DETAIL = {
    row: { name: 'p-1', phase: 'Ready', mode: 'managed', location: 'us-central1-a' },
    uid: 'u',
    generation: 1,
    events: [],
    leases: [],
    health: null,
    spec: {},
    status: {},
  };

  it('closes the panel when the proxy is gone (404), and live updates stop fetching it', async () => {
    let deleted = false;
    const p = pageWithDom(() => (deleted ? { status: 404 } : { status: 200, body: DETAIL }));
    await p.open('p-1');
    expect(p.detail.hidden).toBe(false);
    expect(p.fetches).toEqual(['/fleet/api/proxies/p-1']);
    await p.update([LISTED]);
    expect(p.fetches).toHaveLength(2); // open: refetched on each live update
    deleted = true;
    await p.update([LISTED]);
    expect(p.fetches).toHaveLength(3);
    expect(p.detail.hidden).toBe(true);
    await p.update([LISTED]);
    await p.update([LISTED]);
    expect(p.fetches).toHaveLength(3);
  });

  it('a first fetch answered 404 (an instance not caught up with a proxy just created) closes nothing', async () => {
    // Cold review of 7bca57d6: the click's fetch may reach an instance whose view lags the stream's.
    let known = false;
    const p = pageWithDom(() => (known ? { status: 200, body: DETAIL } : { status: 404 }));
    await p.open('p-1');
    known = true;
    await p.update([LISTED]);
    expect(p.fetches).toHaveLength(2);
    expect(p.detail.hidden).toBe(false);
  });

  it('a proxy gone from the stream closes its panel, even one never shown: no fetch at every update', async () => {
    // Re-read of 841fac85: deleted between the stream's update and the click, its first fetch 404s, the
    // panel is never shown, and openName stayed set — fetched again at every live update.
    const p = pageWithDom(() => ({ status: 404 }));
    await p.open('p-1');
    await p.update([]);
    await p.update([]);
    expect(p.fetches).toEqual(['/fleet/api/proxies/p-1']);
    expect(p.detail.hidden).not.toBe(false);
  });

  it('keeps it open on another refusal (a 503 while the views load): the next update retries', async () => {
    let status = 200;
    const p = pageWithDom(() => ({ status, body: DETAIL }));
    await p.open('p-1');
    status = 503;
    await p.update([LISTED]);
    expect(p.detail.hidden).toBe(false);
    await p.update([LISTED]);
    expect(p.fetches).toHaveLength(3);
  });
});

describe('FLEET_JS renders the Healthy cell as the server does (page.ts rowHtml)', () => {
  // The page is rendered twice: by the server on load, then by this script on every live update. A
  // SUSPECT verdict (Healthy=True, ProbeSuspect/PassiveSuspect) must read `suspect` in both, never `yes`.
  it.each([
    ['True', 'PassiveSuspect'],
    ['True', 'ProbeSuspect'],
    ['True', 'ProbeSucceeded'],
    ['False', 'PassiveFailures'],
    ['False', 'ProbeFailed'],
  ] as const)('Healthy=%s (%s)', async (status, reason) => {
    const f = twoProxies();
    const a = f.proxies.get('a')!;
    const conditions = a.status.conditions.map((c) => (c.type === 'Healthy' ? { ...c, status, reason } : c));
    f.proxies.set('a', { ...a, status: { ...a.status, conditions } });
    const row = buildFleetView(f.inputs(), NOW).rows[0]!;
    const server = rowHtml(row, NOW).match(
      /<td data-col="healthy"><span class="([^"]*)" title="([^"]*)">([^<]*)<\/span><\/td>/,
    );
    const p = pageWithDom(() => ({ status: 404 }));
    await p.update([row]);
    const td = p
      .rows()[0]!
      .childNodes.find((c) => (c as FakeElement).getAttribute?.('data-col') === 'healthy') as FakeElement;
    const badge = td.childNodes[0] as FakeElement;
    expect([badge.className, badge.title, badge.textContent]).toEqual([
      server?.[1],
      server?.[2],
      server?.[3],
    ]);
    expect(badge.textContent).toBe(reason.endsWith('Suspect') ? 'suspect' : status === 'True' ? 'yes' : 'no');
  });
});
