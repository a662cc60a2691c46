// The lease API's part of the environment contract (read by the API's config.ts, i.e. by main.ts only):
//   DISCOVERY_TOKENS                 "name:token,…" crawler bearer tokens (several, so that they can rotate);
//                                    unset: admin credentials only; set but naming none: refused at start
//   LEASE_COOLDOWN_SECONDS           seed §7 CooldownWindow (default 300)
//   LEASE_CREDENTIALS_CACHE_SECONDS  how long proxy credentials read from Secret Manager are reused (60)
//   SECRET_MANAGER_EMULATOR_HOST     (base contract) where proxy credentials are read locally
import { z } from 'zod';
import { envNumber } from '../../../../shared/src/config/env.js';
import { DEFAULT_COOLDOWN_WINDOW_MS } from '../../../../shared/src/domain/leases/model.js';
import { AuthConfigError } from '../auth/authenticator.js';
import { type NamedToken, parseCrawlerTokens } from '../discovery/auth.js';

const LeaseEnv = z.object({
  LEASE_COOLDOWN_SECONDS: envNumber(z.number().int().min(1).max(86_400)).default(
    DEFAULT_COOLDOWN_WINDOW_MS / 1000,
  ),
  LEASE_CREDENTIALS_CACHE_SECONDS: envNumber(z.number().int().min(0).max(3600)).default(60),
});

export interface LeaseConfig {
  tokens: NamedToken[];
  cooldownWindowMs: number;
  credentialsCacheMs: number;
  secretManagerEmulatorHost?: string;
}

/**
 * Throws zod's error or AuthConfigError (a bad DISCOVERY_TOKENS entry, or one set but naming no token);
 * main.ts reports it and exits.
 */
export function loadLeaseConfig(env: Record<string, string | undefined>): LeaseConfig {
  const e = LeaseEnv.parse(env);
  const tokens = parseCrawlerTokens(env.DISCOVERY_TOKENS);
  // Set but empty is a mistake, not a choice: a rotation whose new secret version is blank or lost every
  // entry. Started, the revision passed its health check, took all traffic, and answered every crawler 401;
  // refused, Cloud Run keeps serving the revision before it. Unset, the API serves admin credentials only
  // (a hand-run API; warned at start).
  if (env.DISCOVERY_TOKENS !== undefined && tokens.length === 0) {
    throw new AuthConfigError(
      'DISCOVERY_TOKENS is set but names no crawler token ("name:token,…"); unset it to serve admin credentials only',
    );
  }
  return {
    tokens,
    cooldownWindowMs: e.LEASE_COOLDOWN_SECONDS * 1000,
    credentialsCacheMs: e.LEASE_CREDENTIALS_CACHE_SECONDS * 1000,
    secretManagerEmulatorHost: env.SECRET_MANAGER_EMULATOR_HOST || undefined,
  };
}
