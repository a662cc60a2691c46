// Structured logs: one JSON object per line with Cloud Logging's `severity` field, filtered by LOG_LEVEL.
import type { LogSeverity, StructuredLog } from '../../../../shared/src/adapters/firestore/lease-listener.js';

export type { LogSeverity, StructuredLog };

const RANK: Record<LogSeverity, number> = { DEBUG: 0, INFO: 1, WARNING: 2, ERROR: 3 };
const LEVELS = { debug: 'DEBUG', info: 'INFO', warn: 'WARNING', error: 'ERROR' } as const;

export function jsonLogger(
  level: keyof typeof LEVELS = 'info',
  write: (line: string) => void = (line) => process.stdout.write(line),
): StructuredLog {
  const min = RANK[LEVELS[level]];
  return (severity, message, fields) => {
    if (RANK[severity] < min) return;
    write(`${JSON.stringify({ severity, message, ...fields, time: new Date().toISOString() })}\n`);
  };
}
