import { describe, expect, it } from 'vitest';
import { type Provider, ProviderError } from '../ports/provider.js';
import { missingContractFields } from '../testing/log-contract.js';
import { jsonLogger } from './log/json-logger.js';
import { PROVIDER_REQUEST_EVENT, withRequestLog } from './provider-requests.js';

function recorded() {
  const lines: Array<Record<string, unknown>> = [];
  const log = jsonLogger({}, { level: 'info', write: (l) => lines.push(JSON.parse(l)) });
  return { lines, log };
}

const inner = (overrides: Partial<Provider> = {}): Provider => ({
  name: 'gce',
  create: async () => ({ providerId: 'z/a' }),
  get: async () => null,
  delete: async () => 'deleting',
  listByTag: async () => ({ instances: [], unreachable: [] }),
  ...overrides,
});

describe('withRequestLog (seed §9 provider_requests_total)', () => {
  it.each([
    ['create', (p: Provider) => p.create({} as never)],
    ['get', (p: Provider) => p.get('z/a')],
    ['delete', (p: Provider) => p.delete('z/a')],
    ['listByTag', (p: Provider) => p.listByTag()],
  ])('logs one ok line per %s call, at info, and returns what the provider did', async (op, call) => {
    const { lines, log } = recorded();
    let t = 1000;
    const p = withRequestLog(inner(), log, () => (t += 5));
    await call(p);
    expect(lines).toEqual([
      expect.objectContaining({
        severity: 'INFO',
        event: PROVIDER_REQUEST_EVENT,
        provider: 'gce',
        op,
        result: 'ok',
        latencyMs: 5,
      }),
    ]);
    // Every field terraform/monitoring.tf reads from the line (shared/src/testing/log-contract.ts).
    expect(lines.map(missingContractFields)).toEqual([[]]);
  });

  it.each([
    [new ProviderError('quota', 'q'), 'quota'],
    [new ProviderError('permanent', 'p'), 'permanent'],
    [new ProviderError('transient', 't'), 'transient'],
    [new Error('bug'), 'error'],
  ])('logs a failure by its class (%s → %s) and rethrows it unchanged', async (err, result) => {
    const { lines, log } = recorded();
    const p = withRequestLog(
      inner({
        get: async () => {
          throw err;
        },
      }),
      log,
    );
    await expect(p.get('z/a')).rejects.toBe(err);
    expect(lines).toEqual([
      expect.objectContaining({ severity: 'WARNING', event: PROVIDER_REQUEST_EVENT, op: 'get', result }),
    ]);
    expect(lines.map(missingContractFields)).toEqual([[]]);
  });

  it('keeps lastCreateFailure optional, as the port has it', async () => {
    const { log } = recorded();
    expect(withRequestLog(inner(), log).lastCreateFailure).toBeUndefined();
    const withLast = withRequestLog(inner({ lastCreateFailure: async () => null }), log);
    expect(await withLast.lastCreateFailure?.('z/a')).toBeNull();
  });
});
