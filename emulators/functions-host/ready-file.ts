// Readiness of a hosted function, told by the function itself: listen-on-host.mjs writes the file once the
// function's own server listens. (A port that accepts could be another process's: a free port chosen for
// the function and taken by someone else before it listened, while the function died of EADDRINUSE.)
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

export interface ReadyFile {
  path: string;
  /** Resolves once the file exists; rejects after `timeoutMs`, or once removed. */
  wait(timeoutMs: number, what: string): Promise<void>;
  remove(): void;
}

export function readyFile(): ReadyFile {
  const dir = mkdtempSync(join(tmpdir(), 'pp-ready-'));
  const path = join(dir, 'ready');
  let removed = false;
  return {
    path,
    async wait(timeoutMs, what) {
      const deadline = performance.now() + timeoutMs;
      // Removed: the start ended otherwise (the function exited first); no use polling on.
      while (!removed && performance.now() < deadline) {
        try {
          statSync(path);
          return;
        } catch {
          await sleep(50);
        }
      }
      throw new Error(`${what} not listening after ${timeoutMs} ms`);
    },
    remove: () => {
      removed = true;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
