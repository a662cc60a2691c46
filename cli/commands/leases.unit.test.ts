import { describe, expect, it } from 'vitest';
import { runCli } from '../run.js';
import { cliDeps, recordingIo } from '../testing.js';

/** runCli against a fetch that records what would have been sent. */
async function cli(args: string[]) {
  const io = recordingIo();
  const sent: string[] = [];
  const fetch = (async (url: string) => {
    sent.push(url);
    return new Response(
      JSON.stringify({ leaseId: 'l1', expiresAt: '2026-02-01T12:10:00.000Z', ttlSeconds: 600 }),
      { headers: { 'content-type': 'application/json' } },
    );
  }) as unknown as typeof globalThis.fetch;
  const code = await runCli(
    ['leases', ...args, '--api', 'http://127.0.0.1:9'],
    cliDeps(io, fetch, { PROXYPLANE_TOKEN: 'crawler-token-0123456789' }),
  );
  return { code, err: io.errLines, sent };
}

describe('leases renew --ttl', () => {
  // The lease routes take 5 to 3600 seconds (TTL_BOUNDS): anything else is refused here, nothing sent.
  it.each(['1', '4', '3601', '0', 'ten'])('refuses %s before sending', async (ttl) => {
    const r = await cli(['renew', 'l1', '--ttl', ttl]);
    expect(r.code).toBe(2);
    expect(r.err.join('\n')).toMatch(/--ttl must be (an integer from \d+ to 3600|a positive integer)/);
    expect(r.sent).toEqual([]);
  });

  it.each(['5', '3600'])('sends %s', async (ttl) => {
    const r = await cli(['renew', 'l1', '--ttl', ttl]);
    expect(r).toMatchObject({ code: 0, sent: ['http://127.0.0.1:9/v1/leases/l1/renew'] });
  });
});
