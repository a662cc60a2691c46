// The API refuses to start without admin credentials (functions/api/src/auth/config.ts), and crawlers
// need a discovery token. The local plane makes one of each, once, keeps them in the gitignored state
// dir (mode 0600) so they survive restarts, and prints them as exports for curl and the examples.
// A developer's own ADMIN_TOKENS / ADMIN_EMAILS / DISCOVERY_TOKENS take precedence.
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseWorkerTokens } from '../../functions/api/src/workers/config.js';
import { writePrivateFile } from './private-file.js';

export interface LocalTokens {
  admin: string;
  crawler: string;
}

const fresh = (): string => randomBytes(24).toString('base64url');

/**
 * The saved tokens, or null when there are none to keep. A file that holds none (empty, cut short, edited
 * into something else) is replaced, said on `warn`: thrown, it failed every start with a bare SyntaxError
 * — after the emulators' JVMs had booted — until someone found and removed it.
 */
function savedTokens(file: string, warn: (text: string) => void): LocalTokens | null {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
  try {
    const saved = JSON.parse(text) as Partial<LocalTokens> | null;
    if (typeof saved?.admin === 'string' && typeof saved.crawler === 'string') {
      return { admin: saved.admin, crawler: saved.crawler };
    }
  } catch {
    // not JSON: replaced below like any other file without tokens
  }
  warn(
    `proxyplane: ${file} holds no tokens; new ones replace it (clients holding the old ones need the new exports)\n`,
  );
  return null;
}

export function loadLocalTokens(
  stateDir: string,
  warn: (text: string) => void = (text) => process.stderr.write(text),
): LocalTokens {
  const file = join(stateDir, 'tokens.json');
  const saved = savedTokens(file, warn);
  if (saved) {
    // Kept, but readable by its owner only: one left 0644 (by hand, a restored backup) held live tokens.
    try {
      chmodSync(file, 0o600);
    } catch (err) {
      // Not ours to change (another owner, a filesystem without modes): the plane still starts.
      warn(`proxyplane: could not make ${file} private (${(err as Error).message})\n`);
    }
    return saved;
  }
  const tokens = { admin: fresh(), crawler: fresh() };
  mkdirSync(stateDir, { recursive: true });
  // Indented: biome checks the state dir like any other JSON in the repo.
  writePrivateFile(file, `${JSON.stringify(tokens, null, 2)}\n`);
  return tokens;
}

/**
 * The API's WORKER_TOKENS and the plane's own gateway's token: the developer's list (a gateway of their
 * own beside the plane's, say) with the plane's worker added — unless the list names that worker, whose
 * token there the gateway then gets.
 */
export function planeWorkerTokens(
  own: string | undefined,
  worker: { id: string; token: string },
): { api?: string; gateway?: string } {
  // Read as the API reads it: a list it would refuse fails here, naming what is wrong.
  const tokens = parseWorkerTokens(own);
  const named = tokens.find((t) => t.workerId === worker.id);
  if (named) return { gateway: named.token };
  const entries = [...tokens, { workerId: worker.id, token: worker.token }];
  return { api: entries.map((t) => `${t.workerId}:${t.token}`).join(','), gateway: worker.token };
}

/** The API's credential env: the developer's when set, the local tokens otherwise. */
export function apiCredentialEnv(tokens: LocalTokens, env: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {};
  if (!env.ADMIN_TOKENS && !env.ADMIN_EMAILS) out.ADMIN_TOKENS = `local:${tokens.admin}`;
  if (!env.DISCOVERY_TOKENS) out.DISCOVERY_TOKENS = `local-crawler:${tokens.crawler}`;
  return out;
}
