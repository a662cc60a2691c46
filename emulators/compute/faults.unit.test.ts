import { describe, expect, it } from 'vitest';
import { Faults } from './faults.js';

describe('Faults', () => {
  it('quota: exactly the next N inserts, then none', () => {
    const f = new Faults();
    f.setQuota({ count: 2, mode: 'async' });
    expect(f.takeQuota()).toMatchObject({ mode: 'async', metric: 'CPUS' });
    expect(f.takeQuota()).not.toBeNull();
    expect(f.takeQuota()).toBeNull();
  });

  it('errors: next N of the named operations only', () => {
    const f = new Faults();
    f.setErrors({ count: 2, code: 500, operations: ['get'] });
    expect(f.takeError('insert')).toBeNull();
    expect(f.takeError('get')).toBe(500);
    expect(f.takeError('get')).toBe(500);
    expect(f.takeError('get')).toBeNull();
  });

  it('errors: a seeded rate is repeatable and close to the rate', () => {
    const run = () => {
      const f = new Faults();
      f.setErrors({ rate: 0.3, seed: 42 });
      return Array.from({ length: 1000 }, () => f.takeError('list'));
    };
    const a = run();
    expect(a).toEqual(run());
    const hits = a.filter((x) => x === 503).length;
    expect(hits).toBeGreaterThan(240);
    expect(hits).toBeLessThan(360);
  });

  it('slow boots apply in order to the next inserts', () => {
    const f = new Faults();
    f.addSlowBoot(5000, 1);
    f.addSlowBoot(7000, 2);
    expect([f.takeBootDelay(), f.takeBootDelay(), f.takeBootDelay(), f.takeBootDelay()]).toEqual([
      5000,
      7000,
      7000,
      null,
    ]);
  });
});
