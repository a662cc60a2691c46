// For the CLI's unit tests: an Io that records instead of printing and never waits, and runCli's
// dependencies with a fetch of the test's own — no terminal, no network, no real credentials.
import type { Io } from './context.js';

export interface RecordingIo extends Io {
  readonly outLines: string[];
  readonly errLines: string[];
  /** Every sleep asked for, in ms (none is waited). */
  readonly sleeps: number[];
  /** Every clearScreen, as how many lines had been printed on stdout before it. */
  readonly clears: number[];
}

export function recordingIo(): RecordingIo {
  const outLines: string[] = [];
  const errLines: string[] = [];
  const sleeps: number[] = [];
  const clears: number[] = [];
  return {
    outLines,
    errLines,
    sleeps,
    clears,
    out: (t) => outLines.push(t),
    err: (t) => errLines.push(t),
    clearScreen: () => clears.push(outLines.length),
    isTTY: false,
    columns: 120,
    readStdin: async () => '',
    readFile: async () => '',
    now: () => new Date('2026-02-01T12:00:00Z'),
    sleep: async (ms) => {
      sleeps.push(ms);
    },
    interrupted: new AbortController().signal,
  };
}

/** runCli's dependencies: `io`, the given fetch, and no token source but `env`. */
export function cliDeps(io: Io, fetch: typeof globalThis.fetch, env: Record<string, string> = {}) {
  return { io, env, tokens: { env: {}, localState: () => null, gcloudToken: () => null }, fetch };
}
