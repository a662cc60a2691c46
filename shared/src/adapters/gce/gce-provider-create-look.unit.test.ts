// GceProvider.create looks for the instance (one get) before it fails a create whose insert may have landed:
// an answer that says nothing of whether it was made (a 5xx other than a stockout, or none at all), or any
// failure after a retried attempt (the first may have landed). Not after an answer that nothing was made:
// a stockout, a rate limit, a 408 or another 4xx on the only attempt.
// test/integration/gce-create-answer-lost.test.ts runs the real client against the Compute emulator.
import { describe, expect, it } from 'vitest';
import { GceProvider, type InstancesApi } from './gce-provider.js';

const zone = 'us-central1-a';
const name = 'pp-0123456789abcdef0123';

/** What @google-cloud/compute 6 over REST throws: code = HTTP status, message = the JSON error body. */
const restError = (code: number, reason?: string) =>
  Object.assign(
    new Error(JSON.stringify({ error: { code, message: 'x', errors: reason ? [{ reason }] : [] } })),
    { code },
  );
const silence = () => Object.assign(new Error('no answer'), { code: 'ETIMEDOUT' });

/** Inserts fail with `answers` in turn; gets find the instance. Counts the gets. */
function provider(answers: Error[], attempts = 1) {
  let gets = 0;
  const instances = {
    insert: async () => {
      throw answers.shift() ?? restError(500, 'backendError');
    },
    get: async () => {
      gets++;
      return [{ name, status: 'RUNNING', labels: {}, networkInterfaces: [] }];
    },
  } as unknown as InstancesApi;
  const gce = new GceProvider({
    project: 'p',
    instances,
    retry: { attempts, baseMs: 1, maxMs: 1, attemptTimeoutMs: 1_000 },
  });
  const request = {
    name,
    proxyName: 'p1',
    uid: '01234567-89ab-4def-8012-3456789abcde',
    zone,
    machineType: 'e2-small',
    image: 'projects/debian-cloud/global/images/family/debian-12',
    port: 3128,
    protocol: 'http' as const,
    startupScript: '#!/bin/sh\n',
    credentialsSecret: null,
    specHash: '0123456789abcdef',
  };
  return { create: () => gce.create(request), gets: () => gets };
}

describe('GceProvider.create: the look after a failed insert', () => {
  it.each<[string, Error[], number, number]>([
    ['a 503 backendError', [restError(503, 'backendError')], 1, 1],
    ['a 500', [restError(500)], 1, 1],
    ['no answer (a network error)', [silence()], 1, 1],
    ['a stockout (503 insufficientCapacity)', [restError(503, 'insufficientCapacity')], 1, 0],
    ['a rate limit (429)', [restError(429)], 1, 0],
    ['a 408', [restError(408)], 1, 0],
    ['a 400', [restError(400, 'invalid')], 1, 0],
    ['no answer, then a stockout on the retry', [silence(), restError(503, 'insufficientCapacity')], 2, 1],
    ['no answer, then a rate limit on the retry', [silence(), restError(403, 'rateLimitExceeded')], 2, 1],
  ])('%s: %i attempt(s), %i look(s)', async (_what, answers, attempts, looks) => {
    const p = provider(answers, attempts);
    const outcome = await p.create().catch((e: unknown) => e);
    expect(p.gets()).toBe(looks);
    // Found by the look: the create succeeds; without one: the insert's failure.
    if (looks > 0) expect(outcome).toEqual({ providerId: `zones/${zone}/instances/${name}` });
    else expect(outcome).toBeInstanceOf(Error);
  });
});
