// Structured logs as Cloud Logging reads them from stdout: one JSON object per line, `severity`,
// `message`, and fields. Secrets never reach a logger: callers pass references, not values.

export type Severity = 'DEBUG' | 'INFO' | 'WARNING' | 'ERROR' | 'CRITICAL';

export interface Logger {
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
  child(fields: Record<string, unknown>): Logger;
}

const rank: Record<Severity, number> = { DEBUG: 0, INFO: 1, WARNING: 2, ERROR: 3, CRITICAL: 4 };
const levelOf = { debug: 'DEBUG', info: 'INFO', warn: 'WARNING', error: 'ERROR' } as const;

export function jsonLogger(
  base: Record<string, unknown> = {},
  opts: { level?: keyof typeof levelOf; write?: (line: string) => void } = {},
): Logger {
  const min = rank[levelOf[opts.level ?? 'info']];
  const write = opts.write ?? ((line: string) => process.stdout.write(`${line}\n`));
  const emit = (severity: Severity, message: string, fields?: Record<string, unknown>) => {
    if (rank[severity] < min) return;
    write(
      JSON.stringify({ severity, message, time: new Date().toISOString(), ...base, ...fields }, replacer),
    );
  };
  return {
    debug: (m, f) => emit('DEBUG', m, f),
    info: (m, f) => emit('INFO', m, f),
    warn: (m, f) => emit('WARNING', m, f),
    error: (m, f) => emit('ERROR', m, f),
    child: (fields) => jsonLogger({ ...base, ...fields }, opts),
  };
}

/** Errors serialise as {name, message, kind, code} — never their stack of request objects. */
function replacer(_key: string, value: unknown): unknown {
  if (value instanceof Error) {
    const e = value as Error & { kind?: unknown; code?: unknown };
    return { name: e.name, message: e.message, kind: e.kind, code: e.code };
  }
  return value;
}

/** A logger that keeps lines in memory (tests assert on what was logged). */
export function memoryLogger(): Logger & { lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const logger = jsonLogger({}, { level: 'debug', write: (l) => lines.push(JSON.parse(l)) });
  return Object.assign(logger, { lines });
}
