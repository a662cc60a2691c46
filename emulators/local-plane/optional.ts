// Our own emulators (Compute, Secret Manager) are written in parallel with the plane: each is loaded
// only if its module exists, by a runtime path so that type-checking does not depend on it.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { repoRoot } from '../../shared/src/config/local-ports.js';

/** What every emulator server module returns from its start function. */
export interface EmulatorHandle {
  url: string;
  stop(): Promise<void>;
}

export type StartEmulator = (opts: Record<string, unknown>) => Promise<EmulatorHandle>;

export interface OptionalEmulator {
  name: string;
  /** Repo-relative module path, e.g. emulators/compute/server.ts. */
  module: string;
  exportName: string;
}

export const OPTIONAL_EMULATORS = {
  compute: {
    name: 'compute emulator',
    module: 'emulators/compute/server.ts',
    exportName: 'startComputeEmulator',
  },
  secretmanager: {
    name: 'secret manager emulator',
    module: 'emulators/secret-manager/server.ts',
    exportName: 'startSecretManagerEmulator',
  },
} as const satisfies Record<string, OptionalEmulator>;

export const isBuilt = (e: OptionalEmulator): boolean => existsSync(join(repoRoot, e.module));

export async function loadEmulator(e: OptionalEmulator): Promise<StartEmulator> {
  const mod = (await import(pathToFileURL(join(repoRoot, e.module)).href)) as Record<string, unknown>;
  const start = mod[e.exportName];
  if (typeof start !== 'function') throw new Error(`${e.module} does not export ${e.exportName}()`);
  return start as StartEmulator;
}
