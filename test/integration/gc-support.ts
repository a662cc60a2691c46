// Helpers shared by the GC, rotation and leak-scan tests: polling with a deadline, and reading the JSON
// log lines a hosted function wrote (test-artifacts/local-plane/<project>/function-<name>.log).
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Firestore } from '@google-cloud/firestore';
import { FirestoreJobRunStore } from '../../shared/src/adapters/firestore/job-run-store.js';
import type { JobRun } from '../../shared/src/ports/job-runs.js';

/** Polls `probe` until it returns something other than undefined/false, or fails after `timeoutMs`. */
export async function eventually<T>(
  what: string,
  probe: () => Promise<T | undefined | false> | T | undefined | false,
  { timeoutMs = 30_000, intervalMs = 100 } = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined && value !== false) return value as T;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`, { cause: last });
    }
    await sleep(intervalMs);
  }
}

export type LogLine = Record<string, unknown> & { severity?: string; message?: string };

/** Every JSON object line of a log file (the framework's own plain-text lines are skipped). */
export function jsonLines(file: string): LogLine[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .flatMap((l) => {
      try {
        return [JSON.parse(l) as LogLine];
      } catch {
        return [];
      }
    });
}

export const functionLog = (logDir: string, name: string): string => join(logDir, `function-${name}.log`);

/** Waits for a run of `job` that started at or after `since` to finish, and returns it. */
export function finishedRun(db: Firestore, job: string, since: Date, timeoutMs = 30_000): Promise<JobRun> {
  const jobs = new FirestoreJobRunStore(db);
  return eventually(
    `a finished ${job} run since ${since.toISOString()}`,
    async () => {
      const run = await jobs.get(job);
      return run && run.startedAt >= since && run.finishedAt ? run : undefined;
    },
    { timeoutMs, intervalMs: 200 },
  );
}

/**
 * A loopback /16 of its own for a Compute emulator whose VMs' proxies a test talks to: others (a
 * developer's `npm start`, a benchmark with a thousand VMs) may hold 127.0.x.y:3128 already, and a VM
 * that cannot bind reports an address where someone else's proxy answers.
 */
export function privateLoopbackRange(): { first: string; last: string } {
  const b = 100 + Math.floor(Math.random() * 150);
  return { first: `127.${b}.0.2`, last: `127.${b}.255.254` };
}
