// Structured logs as Cloud Logging reads them from stdout: one JSON object per line, `severity`,
// `message`, and fields. Secrets never reach a logger: callers pass references, not values. With a
// `traceProject`, a line written inside a trace (trace-context.ts) carries Cloud Logging's trace fields.
import { currentTrace, traceLogFields } from './trace-context.js';

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
  opts: {
    level?: keyof typeof levelOf;
    write?: (line: string) => void;
    /** The project Cloud Logging's trace field names; without it no line carries a trace. */
    traceProject?: string;
  } = {},
): Logger {
  const min = rank[levelOf[opts.level ?? 'info']];
  const write = opts.write ?? ((line: string) => process.stdout.write(`${line}\n`));
  const { traceProject } = opts;
  const emit = (severity: Severity, message: string, fields?: Record<string, unknown>) => {
    if (rank[severity] < min) return;
    const trace = traceProject ? currentTrace() : undefined;
    write(
      JSON.stringify(
        {
          severity,
          message,
          time: new Date().toISOString(),
          ...(trace && traceProject ? traceLogFields(traceProject, trace) : {}),
          ...base,
          ...fields,
        },
        errorReplacer,
      ),
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

/**
 * Errors serialise as {name, message, kind, code, cause} — never their stack of request objects. The cause
 * is what says which dependency failed and how (a PublishError's is the client's "7 PERMISSION_DENIED …"):
 * kept, as far as MAX_CAUSES deep (a cause may lead back to itself).
 */
export function errorReplacer(_key: string, value: unknown): unknown {
  return value instanceof Error ? errorFields(value, MAX_CAUSES) : value;
}

const MAX_CAUSES = 3;

function errorFields(value: unknown, causes: number): unknown {
  if (!(value instanceof Error)) {
    // A gRPC status or another plain object: its code and message only, whatever else it carries.
    if (typeof value !== 'object' || value === null) return value;
    const o = value as { code?: unknown; message?: unknown };
    return { code: o.code, message: o.message };
  }
  const e = value as Error & { kind?: unknown; code?: unknown };
  const cause = e.cause === undefined || causes === 0 ? undefined : errorFields(e.cause, causes - 1);
  return { name: e.name, message: e.message, kind: e.kind, code: e.code, cause };
}

/** A logger that keeps lines in memory (tests assert on what was logged). */
export function memoryLogger(
  opts: { traceProject?: string } = {},
): Logger & { lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const logger = jsonLogger({}, { ...opts, level: 'debug', write: (l) => lines.push(JSON.parse(l)) });
  return Object.assign(logger, { lines });
}
