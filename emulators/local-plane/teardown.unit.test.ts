import { describe, expect, it } from 'vitest';
import { Teardown } from './teardown.js';

describe('Teardown', () => {
  it('stops newest first, once, and collects failures without skipping later steps', async () => {
    const order: string[] = [];
    const t = new Teardown();
    t.add('emulators', async () => void order.push('emulators'));
    t.add('broken', async () => {
      throw new Error('boom');
    });
    t.add('functions', async () => void order.push('functions'));
    const [a, b] = await Promise.all([t.run(), t.run()]);
    expect(order).toEqual(['functions', 'emulators']);
    expect(a).toEqual(['broken: boom']);
    expect(b).toBe(a);
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
});
