// A lifecycle timer that throws is logged at ERROR and does not end the process: an uncaught throw in a
// timer stops every emulator of a local plane that shares it.
import { expect, it } from 'vitest';
import { Lifecycle, type LifecycleDeps } from './lifecycle.js';
import type { EmulatorLog, Severity } from './log.js';

it('logs a throw in a scheduled callback and keeps running the timers after it', async () => {
  const logged: Array<[Severity, string, Record<string, unknown> | undefined]> = [];
  const log: EmulatorLog = (severity, message, fields) => logged.push([severity, message, fields]);
  const lifecycle = new Lifecycle({ log } as unknown as LifecycleDeps);
  const ran: string[] = [];
  const uncaught: unknown[] = [];
  const onUncaught = (err: unknown) => uncaught.push(err);
  // vitest reports an uncaught exception as a failed run; count them here instead
  process.prependListener('uncaughtException', onUncaught);
  try {
    lifecycle.schedule(0, () => {
      throw new TypeError('quota.metric.toLowerCase is not a function');
    });
    lifecycle.schedule(1, () => ran.push('next'));
    await new Promise((resolve) => setTimeout(resolve, 20));
  } finally {
    process.removeListener('uncaughtException', onUncaught);
  }
  expect(uncaught).toEqual([]);
  expect(ran).toEqual(['next']);
  expect(logged).toEqual([
    ['ERROR', 'lifecycle timer failed', { error: 'TypeError: quota.metric.toLowerCase is not a function' }],
  ]);
});
