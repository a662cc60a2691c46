// `npm start` options, parsed from (argv, env) so tests pass their own (the functions-framework way).
import { isAbsolute, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { portOffsetOf, repoRoot } from '../../shared/src/config/local-ports.js';

/** The plane's own state dir in the checkout (any other one must be new, empty or a plane's: state-dir.ts). */
export const DEFAULT_STATE_DIR_NAME = '.local-plane';
export const DEFAULT_STATE_DIR = join(repoRoot, DEFAULT_STATE_DIR_NAME);

export interface PlaneOptions {
  projectId: string;
  /** Added to every firebase.json port, so a second plane (a test) runs beside a developer's. */
  portOffset: number;
  /** Serve the demo target and create the demo fleet on an empty plane (demo.ts). */
  demo: boolean;
  /** Scheduler cadence multiplier: 2 ticks twice as often as `localEverySeconds`. */
  speed: number;
  /** Where logs and state.json go (gitignored). */
  stateDir: string;
  help: boolean;
}

export class OptionsError extends Error {
  readonly kind = 'invalid_option';
}

export const USAGE = `usage: npm start [-- [--no-demo] [--speed=N]]
  --no-demo     do not start the demo fleet
  --speed=N     run scheduler jobs N times as often as localEverySeconds (default 1; 0.05 to 100)
env: PROXYPLANE_PORT_OFFSET=N (adds N to every firebase.json port), PROXYPLANE_STATE_DIR (default .local-plane),
     GOOGLE_CLOUD_PROJECT (default demo-proxyplane)`;

/**
 * --speed's bounds, for what each end breaks. Infinity (or 1e308) made every period 0, and the scheduler
 * published ticks non-stop on 1 ms timers; at 100 the 2 s jobs of schedules.json tick every 20 ms. At the
 * slow end, only the snapshot tick renews the local gateway's ownership grant (180 s, less its safety
 * margin): at 0.01 it came every 500 s, and the gateway's proxies went unusable for most of every cycle.
 * A requeue sweep lasts one period, which must end within its function's timeout and its subscription's
 * ack deadline (120 s; 200 s at 0.01). options.unit.test.ts checks both against the tables at MIN_SPEED.
 */
export const MIN_SPEED = 0.05;
const MAX_SPEED = 100;

/** PROXYPLANE_PORT_OFFSET: added to every firebase.json port by `npm start` and `npm run emulators`. */
export function portOffsetFrom(env: NodeJS.ProcessEnv): number {
  try {
    return portOffsetOf(env.PROXYPLANE_PORT_OFFSET);
  } catch (err) {
    throw err instanceof RangeError ? new OptionsError(err.message) : err;
  }
}

export function parsePlaneOptions(argv: string[] = process.argv.slice(2), env = process.env): PlaneOptions {
  const spec = {
    demo: { type: 'boolean', default: true },
    'no-demo': { type: 'boolean', default: false },
    speed: { type: 'string', default: '1' },
    help: { type: 'boolean', short: 'h', default: false },
  } as const;
  let parsed: ReturnType<typeof parseArgs<{ options: typeof spec }>>;
  try {
    parsed = parseArgs({ args: argv, options: spec, strict: true, allowPositionals: false });
  } catch (err) {
    throw new OptionsError(`${(err as Error).message}\n${USAGE}`, { cause: err });
  }
  const { values } = parsed;
  const speed = Number(values.speed);
  if (!(speed >= MIN_SPEED && speed <= MAX_SPEED)) {
    const slow =
      speed > 0 && speed < MIN_SPEED
        ? ": slower, the gateway's ownership grant lapses between snapshot ticks"
        : '';
    throw new OptionsError(
      `--speed must be a number from ${MIN_SPEED} to ${MAX_SPEED}${slow}, got "${values.speed}"`,
    );
  }
  const portOffset = portOffsetFrom(env);
  // Empty is unset: '' resolved to the checkout itself, where a start deletes logs/ and writes tokens.
  const stateDir = env.PROXYPLANE_STATE_DIR || DEFAULT_STATE_DIR_NAME;
  const stateAt = isAbsolute(stateDir) ? stateDir : join(repoRoot, stateDir);
  // The checkout itself (`.`, its path): a start deletes <stateDir>/logs and writes tokens into it.
  if (resolve(stateAt) === resolve(repoRoot)) {
    throw new OptionsError(
      `PROXYPLANE_STATE_DIR must not be the checkout itself ("${stateDir}"): leave it unset for .local-plane`,
    );
  }
  return {
    projectId: env.GOOGLE_CLOUD_PROJECT || 'demo-proxyplane',
    portOffset,
    demo: values.demo && !values['no-demo'],
    speed,
    stateDir: stateAt,
    help: values.help,
  };
}
