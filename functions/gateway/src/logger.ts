// One JSON object per line with Cloud Logging's `severity` field (house rule); nothing else logs.
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
        `${JSON.stringify({ severity: SEVERITY[l], message, component: 'gateway', ...fields }, replacer)}\n`,
      );
    };
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

/**
 * Errors serialise as {name, message, kind, code}, as the functions' logger has them
 * (shared/src/adapters/log/json-logger.ts): never their own enumerable fields. A GaxiosError from the
 * identity-token or control-plane calls carries `config` with the request's headers — the worker's
 * `Authorization: Bearer` token — and `response`; JSON.stringify would write them all.
 */
function replacer(_key: string, value: unknown): unknown {
  if (value instanceof Error) {
    const e = value as Error & { kind?: unknown; code?: unknown };
    return { name: e.name, message: e.message, kind: e.kind, code: e.code };
  }
  return value;
}
