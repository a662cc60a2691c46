// A stop gives the child stopGraceMs after SIGTERM before SIGKILL: the API and the gateway under the local
// plane shut down as on Cloud Run (10 s, local-plane/services.ts), past the launcher's default 5 s.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startReadyProcess } from './ready-process.js';

const dir = mkdtempSync(join(tmpdir(), 'ready-process-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A child that takes `stopsInMs` to stop on SIGTERM (a drain), then exits 0. */
function slowStopper(name: string, stopsInMs: number, stopGraceMs: number) {
  const logFile = join(dir, `${name}.log`);
  const script = `process.on('SIGTERM', () => setTimeout(() => process.exit(0), ${stopsInMs}));
console.log('ready'); setInterval(() => {}, 1000);`;
  return startReadyProcess({
    name,
    command: process.execPath,
    args: ['-e', script],
    logFile,
    stopGraceMs,
    ready: async () => {
      for (let i = 0; i < 200; i++) {
        if (existsSync(logFile) && readFileSync(logFile, 'utf8').includes('ready')) return;
        await new Promise((r) => setTimeout(r, 25));
      }
      throw new Error(`${name} never said ready`);
    },
  });
}

describe('startReadyProcess: stopGraceMs', () => {
  it('lets a child that stops within it exit on its own, and kills one that does not', async () => {
    const [patient, hasty] = await Promise.all([
      slowStopper('patient', 400, 5_000),
      slowStopper('hasty', 2_000, 150),
    ]);
    await Promise.all([patient.stop(), hasty.stop()]);
    expect(await patient.exited).toEqual({ code: 0, signal: null });
    expect(await hasty.exited).toEqual({ code: null, signal: 'SIGKILL' });
  });
});
