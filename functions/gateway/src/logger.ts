// One JSON object per line with Cloud Logging's `severity` field (house rule); nothing else logs.
// Errors serialise as the functions' logger has them (errorReplacer): never their own enumerable fields —
// a GaxiosError from the identity-token or control-plane calls carries `config` with the request's headers
// (the worker's `Authorization: Bearer` token) and `response`, which JSON.stringify would write whole.
import { errorReplacer } from '../../../shared/src/adapters/log/json-logger.js';

export const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const;
export type Level = (typeof LOG_LEVELS)[number];
const RANK: Record<Level, number> = { debug: 0, info: 1, warn: 2, error: 3 };
const SEVERITY: Record<Level, string> = { debug: 'DEBUG', info: 'INFO', warn: 'WARNING', error: 'ERROR' };

export type Logger = Record<Level, (message: string, fields?: Record<string, unknown>) => void>;

export function jsonLogger(
  level: Level,
  write: (line: string) => void = (l) => process.stdout.write(l),
): Logger {
  const at =
    (l: Level) =>
    (message: string, fields: Record<string, unknown> = {}) => {
      if (RANK[l] < RANK[level]) return;
      write(
        `${JSON.stringify({ severity: SEVERITY[l], message, component: 'gateway', ...fields }, errorReplacer)}\n`,
      );
    };
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}
