// The lease service's part of the environment contract. Only entry points call loadLeaseConfig(env).
import { z } from 'zod';
import { DEFAULT_COOLDOWN_WINDOW_MS } from '../../../../shared/src/domain/leases/model.js';
import { type NamedToken, parseTokens } from '../discovery/auth.js';

const LeaseEnv = z.object({
  /** "name:token,name2:token2": crawler bearer tokens, several at once so that they can rotate. */
  DISCOVERY_TOKENS: z.string().optional(),
  /** Seed §7 CooldownWindow, in seconds. */
  LEASE_COOLDOWN_SECONDS: z.coerce
    .number()
    .int()
    .min(1)
    .max(86_400)
    .default(DEFAULT_COOLDOWN_WINDOW_MS / 1000),
  /** How long proxy credentials read from Secret Manager are reused. */
  LEASE_CREDENTIALS_CACHE_SECONDS: z.coerce.number().int().min(0).max(3600).default(60),
  FIRESTORE_EMULATOR_HOST: z.string().optional(),
});

export interface LeaseConfig {
  tokens: NamedToken[];
  /** No tokens: every caller is "anonymous". Allowed only in local mode. */
  authDisabled: boolean;
  cooldownWindowMs: number;
  credentialsCacheMs: number;
}

export class LeaseConfigError extends Error {
  readonly kind = 'config';
}

/** Local mode = the plane runs against the Firestore emulator; only there may auth be off. */
export function loadLeaseConfig(env: NodeJS.ProcessEnv = process.env): LeaseConfig {
  const parsed = LeaseEnv.safeParse(env);
  if (!parsed.success) throw new LeaseConfigError(`lease config: ${parsed.error.message}`);
  const e = parsed.data;
  let tokens: NamedToken[];
  try {
    tokens = parseTokens(e.DISCOVERY_TOKENS);
  } catch (err) {
    throw new LeaseConfigError((err as Error).message, { cause: err });
  }
  if (tokens.length === 0 && !e.FIRESTORE_EMULATOR_HOST) {
    throw new LeaseConfigError('DISCOVERY_TOKENS is empty: auth may only be off in local mode (emulators)');
  }
  return {
    tokens,
    authDisabled: tokens.length === 0,
    cooldownWindowMs: e.LEASE_COOLDOWN_SECONDS * 1000,
    credentialsCacheMs: e.LEASE_CREDENTIALS_CACHE_SECONDS * 1000,
  };
}
