// GceProvider and the Operations GCE answers with. lastCreateFailure reads the newest insert Operation of
// an instance, and delete reads the Operation its call returns (one that already failed says so).
// lastCreateFailure: GCE lists operations by
// name unless told otherwise — operation-<ms>-…, oldest first — a page at a time; a proxy re-inserting each
// QuotaRetry for hours has more than a page of them. A fake zoneOperations.list with GCE's ordering and
// paging: 600 inserts, every one but the newest failed on quota, the newest still running.
import { describe, expect, it } from 'vitest';
import { memoryLogger } from '../log/json-logger.js';
import { GceProvider, type ZoneOperationsApi } from './gce-provider.js';

const zone = 'us-central1-a';
const name = 'pp-0123456789abcdef0123';
const target = `https://www.googleapis.com/compute/v1/projects/p/zones/${zone}/instances/${name}`;

function insert(i: number, running: boolean) {
  const at = new Date(Date.UTC(2026, 0, 1) + i * 60_000);
  return {
    name: `operation-${at.getTime()}-${String(i).padStart(4, '0')}`,
    operationType: 'insert',
    targetLink: target,
    insertTime: at.toISOString(),
    creationTimestamp: at.toISOString(),
    status: running ? 'RUNNING' : 'DONE',
    ...(running
      ? {}
      : { error: { errors: [{ code: 'QUOTA_EXCEEDED', message: "Quota 'CPUS' exceeded." }] } }),
  };
}

const ops = Array.from({ length: 600 }, (_, i) => insert(i, i === 599));

/** GCE's list: by name (oldest first), 500 a page with a page token; a sort order beside a filter refused. */
const zoneOperations = {
  list: async (req: { maxResults?: number; orderBy?: string; filter?: string; pageToken?: string }) => {
    if (req.filter && req.orderBy)
      throw Object.assign(
        new Error('Specifying both a list filter and sort order is not currently supported.'),
        {
          code: 400,
        },
      );
    const sorted = [...ops].sort((a, b) => a.name.localeCompare(b.name));
    const from = req.pageToken ? Number(req.pageToken) : 0;
    const to = from + (req.maxResults ?? 500);
    return [sorted.slice(from, to), to < sorted.length ? { ...req, pageToken: String(to) } : null];
  },
} as unknown as ZoneOperationsApi;

describe('GceProvider.lastCreateFailure with more than a page of insert operations', () => {
  it('reads the newest insert (still running: no failure) from the last page, not the newest of the first', async () => {
    const provider = new GceProvider({ project: 'p', instances: {} as never, zoneOperations });
    await expect(provider.lastCreateFailure(`zones/${zone}/instances/${name}`)).resolves.toBeNull();
  });
});

describe('GceProvider.lastCreateFailure past its page bound', () => {
  it('says the newest is unseen (null, logged) rather than answer from the oldest pages', async () => {
    const many = Array.from({ length: 20 * 500 + 1 }, (_, i) => insert(i, false));
    const list = async (req: { pageToken?: string; maxResults?: number }) => {
      const from = req.pageToken ? Number(req.pageToken) : 0;
      const to = from + (req.maxResults ?? 500);
      return [many.slice(from, to), to < many.length ? { ...req, pageToken: String(to) } : null];
    };
    const log = memoryLogger();
    const provider = new GceProvider({
      project: 'p',
      instances: {} as never,
      zoneOperations: { list } as unknown as ZoneOperationsApi,
      log,
    });
    await expect(provider.lastCreateFailure(`zones/${zone}/instances/${name}`)).resolves.toBeNull();
    expect(log.lines).toContainEqual(
      expect.objectContaining({
        message: 'more insert operations than zoneOperations pages read; the newest unseen',
      }),
    );
  });
});

describe('GceProvider.delete with an Operation that has already failed', () => {
  const failedOp = (code: string, httpErrorStatusCode: number) => ({
    latestResponse: {
      status: 'DONE',
      httpErrorStatusCode,
      error: { errors: [{ code, message: 'x' }] },
    },
  });
  const providerAnswering = (op: unknown) =>
    new GceProvider({
      project: 'p',
      instances: { delete: async () => [op] } as never,
      retry: { attempts: 1, baseMs: 1, maxMs: 1 },
    });

  it('fails (transient: a read or delete is never the spec’s fault) instead of reading as deleting', async () => {
    const provider = providerAnswering(failedOp('RESOURCE_IN_USE_BY_ANOTHER_RESOURCE', 400));
    await expect(provider.delete(`zones/${zone}/instances/${name}`)).rejects.toMatchObject({
      kind: 'transient',
    });
  });

  it('an Operation that is running or done without error is a delete under way', async () => {
    const provider = providerAnswering({ latestResponse: { status: 'RUNNING' } });
    await expect(provider.delete(`zones/${zone}/instances/${name}`)).resolves.toBe('deleting');
  });

  it.each<[string, string, 'deleting' | 'not-ready']>([
    ['PROVISIONING', 'refused during the creation: not ready, to be asked again', 'not-ready'],
    ['STOPPING', 'refused beside an earlier delete under way: deleting', 'deleting'],
  ])(
    'RESOURCE_NOT_READY in the Operation, the instance %s, reads as the 400 resourceNotReady does: %s',
    async (status, _why, outcome) => {
      const provider = new GceProvider({
        project: 'p',
        instances: {
          delete: async () => [failedOp('RESOURCE_NOT_READY', 400)],
          get: async () => [{ status }],
        } as never,
        retry: { attempts: 1, baseMs: 1, maxMs: 1 },
      });
      await expect(provider.delete(`zones/${zone}/instances/${name}`)).resolves.toBe(outcome);
    },
  );

  it('one that failed as not found: the instance is gone, as a 404 answer', async () => {
    const provider = providerAnswering(failedOp('RESOURCE_NOT_FOUND', 404));
    await expect(provider.delete(`zones/${zone}/instances/${name}`)).resolves.toBe('deleting');
  });
});
