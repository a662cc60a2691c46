// `npm run emulator:compute -- --port 18190 [--host 127.0.0.1] [--boot-delay-ms 1000]
//   [--delete-delay-ms 500] [--project demo] [--zones us-central1-a,us-east1-b] [--secret-manager host:port]`
// Runs the Compute Engine emulator alone, prints its URL, stops cleanly on SIGINT/SIGTERM. Instances
// that name a credentials secret read it from the Secret Manager at --secret-manager (default:
// $SECRET_MANAGER_EMULATOR_HOST); without one they get none (their proxies stay down, fail closed).
import { parseArgs } from 'node:util';
import { jsonLineLog } from './log.js';
import { startComputeEmulator } from './server.js';

const int = (name: string, value: string | undefined): number | undefined => {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0)
    throw new Error(`--${name} must be a non-negative integer, got ${value}`);
  return n;
};

function parseComputeArgs(argv: string[]) {
  const { values } = parseArgs({
    args: argv,
    options: {
      host: { type: 'string', default: '127.0.0.1' },
      port: { type: 'string' },
      'boot-delay-ms': { type: 'string' },
      'delete-delay-ms': { type: 'string' },
      project: { type: 'string' },
      zones: { type: 'string' },
      'secret-manager': { type: 'string' },
    },
  });
  return {
    host: values.host,
    port: int('port', values.port) ?? 0,
    bootDelayMs: int('boot-delay-ms', values['boot-delay-ms']),
    deleteDelayMs: int('delete-delay-ms', values['delete-delay-ms']),
    projectId: values.project,
    zones: values.zones?.split(',').map((z) => z.trim()),
    secretManagerEndpoint:
      values['secret-manager'] ?? (process.env.SECRET_MANAGER_EMULATOR_HOST || undefined),
  };
}

async function main(): Promise<void> {
  const log = jsonLineLog('compute-emulator');
  const emulator = await startComputeEmulator({ ...parseComputeArgs(process.argv.slice(2)), log });
  process.stdout.write(`compute emulator: ${emulator.url}  (COMPUTE_EMULATOR_HOST=${emulator.endpoint})\n`);
  const stop = (signal: string) => {
    log('INFO', 'stopping', { signal });
    emulator.stop().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once('SIGINT', () => stop('SIGINT'));
  process.once('SIGTERM', () => stop('SIGTERM'));
}

main().catch((err: unknown) => {
  process.stderr.write(`${JSON.stringify({ severity: 'ERROR', message: String(err) })}\n`);
  process.exit(1);
});
