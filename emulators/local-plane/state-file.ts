// The state dir's state.json: the running `npm start`'s pid, endpoints and exports, which the CLI reads
// for a running plane's tokens (cli/config.ts). A plane removes the file only while it is its own: a
// start that fails (a port taken by the plane that is running) leaves that plane's file alone.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

export interface PlaneState {
  pid: number;
  projectId: string;
  portOffset: number;
  endpoints?: unknown;
  env?: Record<string, string>;
}

export function readPlaneState(file: string): PlaneState | null {
  try {
    const state = JSON.parse(readFileSync(file, 'utf8')) as Partial<PlaneState>;
    return Number.isInteger(state.pid) ? (state as PlaneState) : null;
  } catch {
    return null;
  }
}

export function writePlaneState(file: string, state: PlaneState): void {
  mkdirSync(dirname(file), { recursive: true });
  // Mode 0600: once up, it holds the local tokens.
  writeFileSync(file, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 });
}

/** Removes the file if `pid` wrote it; another plane's is left as it is. */
export function removeOwnPlaneState(file: string, pid: number = process.pid): void {
  if (readPlaneState(file)?.pid === pid) rmSync(file, { force: true });
}
