// One shutdown per process, whatever start-up has reached (process-shutdown.ts).
import { describe, expect, it } from 'vitest';
import { jsonLogger } from './logger.js';
import { ProcessShutdown, type Stoppable } from './process-shutdown.js';

function harness() {
  const events: string[] = [];
  const lines: Array<Record<string, unknown>> = [];
  const log = jsonLogger('debug', (l) => lines.push(JSON.parse(l) as Record<string, unknown>));
  const exited: number[] = [];
  const shutdown = new ProcessShutdown({ log, exit: (code) => void exited.push(code) });
  const gateway = (name: string): Stoppable => ({
    shutdown: async () => {
      events.push(`${name} shutdown`);
    },
  });
  shutdown.onClose(async () => {
    events.push('closed');
  });
  return { shutdown, events, lines, exited, gateway };
}

function deferred<T>() {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

describe('process shutdown', () => {
  it('during start-up: aborts it, waits for it to settle, shuts down what it returned, closes, exits 0', async () => {
    const h = harness();
    const startup = deferred<Stoppable | null>();
    h.shutdown.starting(startup.promise);
    const done = h.shutdown.request('SIGTERM');
    expect(h.shutdown.signal.aborted).toBe(true);
    await Promise.resolve();
    expect(h.events).toEqual([]);
    startup.resolve(h.gateway('gw'));
    await done;
    expect(h.events).toEqual(['gw shutdown', 'closed']);
    expect(h.exited).toEqual([0]);
  });

  it('a start-up that stopped itself (null: the start wait was cut short) is only closed after', async () => {
    const h = harness();
    h.shutdown.starting(Promise.resolve(null));
    await h.shutdown.request('SIGTERM');
    expect(h.events).toEqual(['closed']);
    expect(h.exited).toEqual([0]);
  });

  it('before start-up began: closes and exits', async () => {
    const h = harness();
    await h.shutdown.request('SIGINT');
    expect(h.events).toEqual(['closed']);
    expect(h.exited).toEqual([0]);
  });

  it('a second signal during shutdown starts no second shutdown', async () => {
    const h = harness();
    const startup = deferred<Stoppable | null>();
    h.shutdown.starting(startup.promise);
    const first = h.shutdown.request('SIGTERM');
    const second = h.shutdown.request('SIGTERM');
    const third = h.shutdown.request('SIGINT', 1);
    startup.resolve(h.gateway('gw'));
    await Promise.all([first, second, third]);
    expect(h.events).toEqual(['gw shutdown', 'closed']);
    expect(h.exited).toEqual([0]);
    expect(h.lines.filter((l) => l.message === 'shutting down')).toHaveLength(1);
    expect(h.lines.filter((l) => l.message === 'already shutting down')).toHaveLength(2);
  });

  it('a start-up that fails still ends in one exit, with the code asked for', async () => {
    const h = harness();
    const startup = deferred<Stoppable | null>();
    h.shutdown.starting(startup.promise);
    const done = h.shutdown.request('fatal: refused', 1);
    startup.reject(new Error('refused'));
    await done;
    expect(h.events).toEqual(['closed']);
    expect(h.exited).toEqual([1]);
  });

  it('a shutdown step that throws still exits, non-zero', async () => {
    const h = harness();
    h.shutdown.starting(
      Promise.resolve({
        shutdown: () => Promise.reject(new Error('boom')),
      }),
    );
    await h.shutdown.request('SIGTERM');
    expect(h.exited).toEqual([1]);
    expect(h.lines.some((l) => l.message === 'shutdown failed' && l.error === 'boom')).toBe(true);
  });

  it('a client that never closes holds the exit only for the close bound, and is logged', async () => {
    const lines: Array<Record<string, unknown>> = [];
    const log = jsonLogger('debug', (l) => lines.push(JSON.parse(l) as Record<string, unknown>));
    const exited: number[] = [];
    const shutdown = new ProcessShutdown({ log, exit: (code) => void exited.push(code), closeTimeoutMs: 20 });
    shutdown.onClose(() => new Promise<void>(() => {}));
    await shutdown.request('SIGTERM');
    expect(exited).toEqual([0]);
    expect(lines).toContainEqual(
      expect.objectContaining({
        severity: 'WARNING',
        message: 'clients not closed in time: exiting without them',
      }),
    );
  });
});
