// The state dir's state.json: which `npm start` uses the dir (its pid, from the moment it claims the dir),
// and once the plane is up its endpoints and exports, which the CLI reads for a running plane's tokens
// (cli/config.ts). One plane per state dir: the logs, the demo certificate and the gateway's files live
// there too, so a second plane started on the same dir (another port offset, same checkout) would wipe the
// first one's logs and take its state.json. And a plane removes the file only while it is its own: a
// start that fails (a port taken by the plane that is running) leaves that plane's file alone.
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { writePrivateFile } from './private-file.js';

export interface PlaneState {
  pid: number;
  projectId: string;
  portOffset: number;
  endpoints?: unknown;
  env?: Record<string, string>;
}

export class StateDirInUseError extends Error {
  readonly kind = 'state_dir_in_use';
  constructor(
    readonly stateDir: string,
    readonly other: PlaneState,
  ) {
    super(
      `another local plane (pid ${other.pid}, port offset ${other.portOffset}) is running from the state dir ${stateDir}`,
    );
    this.name = 'StateDirInUseError';
  }
}

export const stateFileIn = (stateDir: string): string => join(stateDir, 'state.json');

export function readPlaneState(file: string): PlaneState | null {
  try {
    const state = JSON.parse(readFileSync(file, 'utf8')) as Partial<PlaneState>;
    return Number.isInteger(state.pid) ? (state as PlaneState) : null;
  } catch {
    return null;
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it exists, it is someone else's.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** A live `npm start` plane: the pid runs, and (where /proc tells) its command line is the plane's. A
 *  file left by a plane killed outright may name a pid reused since by something else (after a reboot):
 *  that must not block a start, nor be named as the plane to stop. */
function planeRuns(pid: number): boolean {
  if (!alive(pid)) return false;
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(PLANE_ENTRY);
  } catch (err) {
    // No /proc (macOS): a live pid is taken for the plane. Gone meanwhile: not running.
    return (err as NodeJS.ErrnoException).code !== 'ENOENT' || !existsSync('/proc/self');
  }
}

/** What `npm start` runs (package.json's start script). */
export const PLANE_ENTRY = 'emulators/local-plane/main.ts';

/** Throws StateDirInUseError when the file names a running plane other than `self` (a stale file, of a
 *  plane killed outright, is taken over). */
export function assertStateDirFree(file: string, self: number = process.pid): void {
  const other = readPlaneState(file);
  if (other && other.pid !== self && planeRuns(other.pid)) throw new StateDirInUseError(dirname(file), other);
}

export function writePlaneState(file: string, state: PlaneState): void {
  mkdirSync(dirname(file), { recursive: true });
  // Private: once up, it holds the local tokens.
  writePrivateFile(file, `${JSON.stringify(state, null, 2)}\n`);
}

/** Removes the file if `pid` wrote it; another plane's is left as it is. */
export function removeOwnPlaneState(file: string, pid: number = process.pid): void {
  if (readPlaneState(file)?.pid === pid) rmSync(file, { force: true });
}
