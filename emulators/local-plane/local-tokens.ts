// The API refuses to start without admin credentials (functions/api/src/auth/config.ts), and crawlers
// need a discovery token. The local plane makes one of each, once, keeps them in the gitignored state
// dir (mode 0600) so they survive restarts, and prints them as exports for curl and the examples.
// A developer's own ADMIN_TOKENS / ADMIN_EMAILS / DISCOVERY_TOKENS take precedence.
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseWorkerTokens } from '../../functions/api/src/workers/config.js';

export interface LocalTokens {
  admin: string;
  crawler: string;
}

const fresh = (): string => randomBytes(24).toString('base64url');

export function loadLocalTokens(stateDir: string): LocalTokens {
  const file = join(stateDir, 'tokens.json');
  if (existsSync(file)) {
    const saved = JSON.parse(readFileSync(file, 'utf8')) as Partial<LocalTokens>;
    if (typeof saved.admin === 'string' && typeof saved.crawler === 'string') {
      return { admin: saved.admin, crawler: saved.crawler };
    }
  }
  const tokens = { admin: fresh(), crawler: fresh() };
  mkdirSync(stateDir, { recursive: true });
  // Indented: biome checks the state dir like any other JSON in the repo.
  writeFileSync(file, `${JSON.stringify(tokens, null, 2)}\n`, { mode: 0o600 });
  return tokens;
}

/** The API's credential env: the developer's when set, the local tokens otherwise. */
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

export function apiCredentialEnv(tokens: LocalTokens, env: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {};
  if (!env.ADMIN_TOKENS && !env.ADMIN_EMAILS) out.ADMIN_TOKENS = `local:${tokens.admin}`;
  if (!env.DISCOVERY_TOKENS) out.DISCOVERY_TOKENS = `local-crawler:${tokens.crawler}`;
  return out;
}
