// The gateway's log lines: what Cloud Logging reads (severity, message), the level filter, and errors
// reduced to what identifies them — a raw error's own fields can hold the credentials of the call it
// failed (a GaxiosError's `config.headers`).
import { describe, expect, it } from 'vitest';
import { jsonLogger } from './logger.js';

const recorded = (level: 'debug' | 'info' | 'warn' | 'error' = 'debug') => {
  const lines: string[] = [];
  return { lines, log: jsonLogger(level, (l) => void lines.push(l)) };
};

describe('the gateway logger', () => {
  it('writes one JSON object per line with Cloud Logging severity and message, dropping lower levels', () => {
    const { lines, log } = recorded('warn');
    log.info('hidden');
    log.warn('shown', { workerId: 'gw-1' });
    expect(lines).toHaveLength(1);
    expect(lines[0]!.endsWith('\n')).toBe(true);
    expect(JSON.parse(lines[0]!)).toEqual({
      severity: 'WARNING',
      message: 'shown',
      component: 'gateway',
      workerId: 'gw-1',
    });
  });

  it("logs an error as {name, message, kind, code}, never its own fields (a request's headers)", () => {
    const { lines, log } = recorded();
    const err = Object.assign(new Error('request failed with 401'), {
      code: '401',
      config: {
        url: 'https://api.example/v1/workers/register',
        headers: { Authorization: 'Bearer tok-SECRET' },
      },
      response: { data: { session: 'x' } },
    });
    log.error('register failed', { error: err, nested: { cause: err } });
    expect(lines[0]).not.toContain('tok-SECRET');
    expect(JSON.parse(lines[0]!)).toMatchObject({
      error: { name: 'Error', message: 'request failed with 401', code: '401' },
      nested: { cause: { name: 'Error', message: 'request failed with 401', code: '401' } },
    });
  });
});
