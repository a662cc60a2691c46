// storeDecisions when the store fails part-way: what landed is never left for the next run to probe and
// count again (a failing proxy at its threshold an interval early); a failure before anything landed
// fails the pass, so the next run probes its window again.
import { describe, expect, it } from 'vitest';
import type { HealthDecision, ProxyHealthState } from '../../../shared/src/domain/health/proxy-health.js';
import type {
  HealthStore,
  HealthWriteResult,
  VersionedHealth,
} from '../../../shared/src/ports/health-store.js';
import { type Decided, HEALTH_WRITE_RETRIES, storeDecisions } from './health-writes.js';

const decided = (proxy: string): Decided<HealthDecision> => {
  const decision: HealthDecision = { next: { proxy } as ProxyHealthState, write: true, publish: null };
  return { decision, base: null, redecide: () => decision };
};

function store(over: Partial<HealthStore>): HealthStore {
  const unused = () => Promise.reject(new Error('not used'));
  return { getMany: unused, get: unused, writeMany: unused, deleteMany: unused, listNames: unused, ...over };
}

function log() {
  const warnings: Array<{ message: string; fields: Record<string, unknown> }> = [];
  return {
    warnings,
    info: () => {},
    warn: (message: string, fields: Record<string, unknown>) => warnings.push({ message, fields }),
  };
}

describe('storeDecisions when the store fails', () => {
  it('keeps what landed and leaves the failed writes to their next slot, without throwing', async () => {
    const l = log();
    const health = store({
      writeMany: async (): Promise<HealthWriteResult[]> => ['written', 'failed', 'written'],
    });
    const stored = await storeDecisions({ health, log: l }, ['a', 'b', 'c'].map(decided));
    expect(stored.written).toBe(2);
    expect(stored.decisions.map((d) => d.next.proxy)).toEqual(['a', 'c']);
    expect(l.warnings).toMatchObject([{ fields: { proxies: ['b'], count: 1 } }]);
  });

  it('does not throw when the re-read after a lost race fails once a write has landed', async () => {
    const l = log();
    const health = store({
      writeMany: async (): Promise<HealthWriteResult[]> => ['written', 'conflict'],
      getMany: (): Promise<Map<string, VersionedHealth>> => Promise.reject(new Error('UNAVAILABLE')),
    });
    const stored = await storeDecisions({ health, log: l }, ['a', 'b'].map(decided));
    expect(stored.decisions.map((d) => d.next.proxy)).toEqual(['a']);
    expect(l.warnings).toMatchObject([{ fields: { proxies: ['b'] } }]);
  });

  it('throws when nothing landed: the run fails at this pass and its window is probed again', async () => {
    const failing = store({ writeMany: () => Promise.reject(new Error('UNAVAILABLE')) });
    await expect(storeDecisions({ health: failing, log: log() }, [decided('a')])).rejects.toThrow(
      'UNAVAILABLE',
    );
    const allFailed = store({ writeMany: async (): Promise<HealthWriteResult[]> => ['failed'] });
    await expect(storeDecisions({ health: allFailed, log: log() }, [decided('a')])).rejects.toThrow(
      'health writes failed for a',
    );
  });
});

const fleet = (n: number) => Array.from({ length: n }, (_, i) => `proxy-${String(i).padStart(5, '0')}`);

describe('storeDecisions at fleet scale: each line fits one Cloud Logging entry (256 KB)', () => {
  it('logs the proxies that kept losing the race as their count and the first 100 names', async () => {
    const l = log();
    const health = store({
      writeMany: async (writes): Promise<HealthWriteResult[]> => writes.map(() => 'conflict'),
      getMany: async () => new Map(),
    });
    const names = fleet(10_000);
    const stored = await storeDecisions({ health, log: l }, names.map(decided));
    expect(stored.written).toBe(0);
    expect(l.warnings).toHaveLength(1);
    const { message, fields } = l.warnings[0]!;
    expect(message).toBe('health writes kept losing to another pass; left to the next tick');
    expect(fields).toEqual({
      count: 10_000,
      proxies: names.slice(0, 100),
      truncated: true,
      attempts: HEALTH_WRITE_RETRIES + 1,
    });
    expect(JSON.stringify(fields).length).toBeLessThan(32 * 1024);
  });

  it('logs the writes that failed after others landed as their count, the first 10 names, truncated', async () => {
    const l = log();
    const names = fleet(25);
    const health = store({
      writeMany: async (writes): Promise<HealthWriteResult[]> =>
        writes.map((_, i) => (i === 0 ? 'written' : 'failed')),
    });
    const stored = await storeDecisions({ health, log: l }, names.map(decided));
    expect(stored.written).toBe(1);
    expect(l.warnings).toEqual([
      {
        message: 'health writes failed after others of the pass landed; left to their next slot',
        fields: { count: 24, proxies: names.slice(1, 11), truncated: true },
      },
    ]);
  });

  it('names at most the first 10 proxies in the error of a store that failed them all', async () => {
    const health = store({
      writeMany: async (writes): Promise<HealthWriteResult[]> => writes.map(() => 'failed'),
    });
    const err = await storeDecisions({ health, log: log() }, fleet(10_000).map(decided)).catch(
      (e: Error) => e,
    );
    expect(err).toBeInstanceOf(Error);
    const { message } = err as Error;
    expect(message).toBe(`health writes failed for 10000 proxies: ${fleet(10).join(', ')} and 9990 more`);
  });
});
