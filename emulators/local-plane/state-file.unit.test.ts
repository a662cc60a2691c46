// One plane per state dir, but only a plane that runs holds it: a state.json left by a plane killed
// outright, whose pid is gone or now belongs to some other program, is taken over.
import { type ChildProcess, spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  assertStateDirFree,
  PLANE_ENTRY,
  readPlaneState,
  removeOwnPlaneState,
  StateDirInUseError,
  writePlaneState,
} from './state-file.js';

const dir = mkdtempSync(join(tmpdir(), 'state-file-'));
const file = join(dir, 'state.json');
const children: ChildProcess[] = [];

afterAll(() => {
  for (const c of children) c.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

/** A live process whose command line names the plane's entry, as `npm start`'s node does. */
async function planeLookalike(): Promise<number> {
  const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)', PLANE_ENTRY], {
    stdio: 'ignore',
  });
  children.push(child);
  await new Promise((resolve) => child.once('spawn', resolve));
  return child.pid!;
}

const holder = (pid: number) => ({ pid, projectId: 'demo-proxyplane', portOffset: 0 });

describe('the state dir of a local plane', () => {
  it('is held by a running plane: another start is refused, naming its pid and offset', async () => {
    const pid = await planeLookalike();
    writePlaneState(file, { ...holder(pid), portOffset: 1000 });
    expect(() => assertStateDirFree(file)).toThrow(StateDirInUseError);
    expect(() => assertStateDirFree(file)).toThrow(`another local plane (pid ${pid}, port offset 1000)`);
  });

  it('is free when the pid in the file now runs something else (a pid reused after the plane died)', () => {
    // This test's own parent: alive, and no plane.
    writePlaneState(file, holder(process.ppid));
    expect(() => assertStateDirFree(file)).not.toThrow();
  });

  it('is free when the pid in the file has gone, or is our own', () => {
    writePlaneState(file, holder(2 ** 22 + 1)); // above Linux's pid_max: never a live process
    expect(() => assertStateDirFree(file)).not.toThrow();
    writePlaneState(file, holder(process.pid));
    expect(() => assertStateDirFree(file)).not.toThrow();
  });

  it('is left to its holder when another process removes its own state', async () => {
    const pid = await planeLookalike();
    writePlaneState(file, holder(pid));
    removeOwnPlaneState(file);
    expect(readPlaneState(file)?.pid).toBe(pid);
    removeOwnPlaneState(file, pid);
    expect(readPlaneState(file)).toBeNull();
  });
});

describe('state.json', () => {
  it('is written private even over a file others could read (it holds the tokens once the plane is up)', () => {
    writeFileSync(file, '{}');
    chmodSync(file, 0o644); // whatever the umask
    writePlaneState(file, holder(process.pid));
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readPlaneState(file)?.pid).toBe(process.pid);
  });
});
