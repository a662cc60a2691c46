import { describe, expect, it } from 'vitest';
import { Layer, Teardown } from './teardown.js';

const tick = () => new Promise((r) => setTimeout(r, 5));

describe('Teardown', () => {
  it('stops the highest layer first whatever the registration order, once, collecting failures', async () => {
    const order: string[] = [];
    const t = new Teardown();
    const step = (name: string) => async () => {
      await tick();
      order.push(name);
    };
    t.add('emulators', step('emulators'), Layer.googleEmulators);
    t.add('function a', step('function a'), Layer.services);
    t.add('compute', step('compute'), Layer.ourEmulators);
    t.add('broken', async () => {
      throw new Error('boom');
    });
    t.add('scheduler', step('scheduler'), Layer.scheduler);
    t.add('function b', step('function b'), Layer.services);
    t.add('gateway', step('gateway'), Layer.gateway);
    const [a, b] = await Promise.all([t.run(), t.run()]);
    // The gateway before the API it reports to (its draining and final reports), after the scheduler.
    expect(order.slice(0, 2)).toEqual(['scheduler', 'gateway']);
    expect(order.slice(2, 4).sort()).toEqual(['function a', 'function b']);
    expect(order.slice(4)).toEqual(['compute', 'emulators']);
    expect(a).toEqual(['broken: boom']);
    expect(b).toEqual(a);
  });

  it('stops the pieces of one layer together', async () => {
    const t = new Teardown();
    let running = 0;
    let peak = 0;
    for (const name of ['a', 'b', 'c']) {
      t.add(name, async () => {
        running++;
        peak = Math.max(peak, running);
        await tick();
        running--;
      });
    }
    await t.run();
    expect(peak).toBe(3);
  });

  it('stops at once what is added after stopping began', async () => {
    const order: string[] = [];
    const t = new Teardown();
    let release!: () => void;
    t.add('slow', () => new Promise<void>((r) => (release = r)));
    const done = t.run();
    t.add('late', async () => void order.push('late'));
    expect(t.stopping).toBe(true);
    await Promise.resolve();
    expect(order).toEqual(['late']);
    release();
    await done;
  });

  it('reports the failure of a step added after stopping began, as it reports the others', async () => {
    // main.ts exits 1 and names what failed to stop from run()'s answer: a piece that came up during the
    // shutdown (the emulators' JVMs finish starting) and then failed to stop must not read as stopped.
    const t = new Teardown();
    let release!: () => void;
    t.add('slow', () => new Promise<void>((r) => (release = r)));
    const first = t.run();
    t.add('late', async () => {
      throw new Error('still running');
    });
    release();
    expect(await first).toEqual(['late: still running']);
    expect(await t.run()).toEqual(['late: still running']);
  });

  it('a later run() also waits for steps added after the first run finished', async () => {
    const t = new Teardown();
    await t.run();
    let stopped = false;
    t.add('late', async () => {
      await tick();
      stopped = true;
    });
    await t.run();
    expect(stopped).toBe(true);
  });

  it('aborts its signal as stopping begins, so a long start step gives up at once', async () => {
    const t = new Teardown();
    const aborted: string[] = [];
    t.signal.addEventListener('abort', () => aborted.push(t.stopping ? 'stopping' : 'not yet'));
    expect(t.signal.aborted).toBe(false);
    const run = t.run();
    expect(t.signal.aborted).toBe(true);
    await run;
    await t.run();
    expect(aborted).toEqual(['stopping']);
  });
});
