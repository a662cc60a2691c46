// Whether a start may use the state dir it was given: it clears <dir>/logs and writes tokens.json,
// state.json, demo-target/ and gateway/ there. A PROXYPLANE_STATE_DIR that points at a directory of the
// user's ($HOME, /tmp, a project) would lose its logs/ — so a dir is used only when it is the checkout's
// own .local-plane, is new or empty, or holds nothing but what a plane writes.
import { existsSync, mkdirSync, readdirSync } from 'node:fs';
import { resolve } from 'node:path';

/** What a plane writes into its state dir (and the temporary files its atomic writes leave). */
const PLANE_ENTRY = /^(logs|tokens\.json|state\.json|demo-target|gateway)(\..+)?$/;

export class StateDirRefused extends Error {}

/** Makes the dir when it is missing; throws StateDirRefused when it holds something a plane did not write. */
export function claimStateDir(dir: string, defaultDir: string): void {
  if (!existsSync(dir)) {
    mkdirSync(dir, { recursive: true });
    return;
  }
  if (resolve(dir) === resolve(defaultDir)) return;
  const foreign = readdirSync(dir).filter((name) => !PLANE_ENTRY.test(name));
  if (foreign.length === 0) return;
  const named = foreign.slice(0, 3).join(', ') + (foreign.length > 3 ? ', …' : '');
  throw new StateDirRefused(
    `PROXYPLANE_STATE_DIR ${dir} holds files the local plane did not write (${named}): a start clears its logs/ and writes tokens.json, state.json, demo-target/ and gateway/ there — point it at a directory of its own (a missing one is made)`,
  );
}
