// `npm start`: the whole plane on one machine (Google's emulators, ours, every built function, the
// API, the scheduler) until Ctrl-C, which stops everything, children first, and leaves no process.
import { join, relative } from 'node:path';
import { performance } from 'node:perf_hooks';
import { MissingToolError } from '../launcher/sdk.js';
import { onShutdown } from '../launcher/shutdown-signals.js';
import { demoStep } from './demo.js';
import { adviceOffset } from './layout.js';
import { OptionsError, type PlaneOptions, parsePlaneOptions, USAGE } from './options.js';
import { StartCancelled, startPlane } from './plane.js';
import { PortInUseError, WildcardPortError } from './ports.js';
import { elapsed, fleetPageUrl, formatReport } from './report.js';
import { StateDirRefused } from './state-dir.js';
import { removeOwnPlaneState, StateDirInUseError, stateFileIn, writePlaneState } from './state-file.js';
import { Teardown } from './teardown.js';

const t0 = performance.now();
const displayPath = (p: string) => {
  const rel = relative(process.cwd(), p);
  return rel && !rel.startsWith('..') ? rel : p;
};
const progress = (line: string) => console.log(`[${elapsed(performance.now() - t0).padStart(6)}] ${line}`);

let options: PlaneOptions;
try {
  options = parsePlaneOptions();
} catch (err) {
  console.error(err instanceof OptionsError ? err.message : err);
  process.exit(2);
}
if (options.help) {
  console.log(USAGE);
  process.exit(0);
}

// The SDK clients in this process would otherwise probe the GCE metadata server (recipes §0).
process.env.METADATA_SERVER_DETECTION ??= 'none';
const stateFile = stateFileIn(options.stateDir);
const teardown = new Teardown(progress);
// Stopping takes a few seconds (JVMs); never longer than this, whatever hangs. Room for the worst case
// of each layer in turn: the gateway's and the API's 11 s (services.ts SERVICE_STOP_GRACE_MS), then the
// emulators' 5 s each.
const STOP_DEADLINE_MS = 40_000;

let starting: Promise<unknown> = Promise.resolve();
let shuttingDown = false;

async function shutdown(reason: string, exitCode: number): Promise<void> {
  if (shuttingDown) {
    progress(`${reason}: already stopping`);
    return;
  }
  shuttingDown = true;
  progress(`${reason}: stopping`);
  // A piece still starting is registered only once up: let the start reach its next step, where it sees
  // the shutdown and stops, so nothing it spawned is orphaned. The emulators' JVMs, the long wait, give up
  // at once (teardown.signal) and stop what they spawned; every other start step has its own timeout, so
  // this wait is bounded.
  void teardown.run();
  await starting.catch(() => {});
  setTimeout(() => {
    console.error(`stopping took over ${STOP_DEADLINE_MS / 1000}s; exiting`);
    process.exit(1);
  }, STOP_DEADLINE_MS).unref();
  const failures = await teardown.run();
  // Only ours: a start refused because a plane runs on these ports must not take that plane's file.
  removeOwnPlaneState(stateFile);
  for (const f of failures) console.error(`failed to stop ${f}`);
  progress(`stopped in ${elapsed(performance.now() - t0)} since start`);
  process.exit(failures.length > 0 ? 1 : exitCode);
}

onShutdown((why, code) => void shutdown(why, code));

console.log(
  `proxyplane: starting the local plane (project ${options.projectId}, port offset ${options.portOffset})`,
);
try {
  const startedPlane = startPlane(options, { progress, teardown });
  starting = startedPlane;
  const plane = await startedPlane;
  if (shuttingDown) throw new StartCancelled('stopped while starting');
  const report = formatReport({
    elapsedMs: performance.now() - t0,
    projectId: options.projectId,
    portOffset: options.portOffset,
    endpoints: plane.endpoints,
    notBuilt: plane.notBuilt,
    env: plane.exports,
    logDir: displayPath(plane.logDir),
    fleetUrl: fleetPageUrl(
      plane.exports.PROXYPLANE_API_URL!,
      plane.exports.PROXYPLANE_ADMIN_TOKEN ?? process.env.PROXYPLANE_ADMIN_TOKEN,
    ),
  });
  console.log(report);
  writePlaneState(stateFile, {
    pid: process.pid,
    projectId: options.projectId,
    portOffset: options.portOffset,
    endpoints: plane.endpoints,
    env: plane.exports,
  });
  if (options.demo && !shuttingDown) await demoStep(options, plane, { progress, teardown });
} catch (err) {
  // If a signal arrived, the start failed because of it (StartCancelled, or a child it stopped):
  // shutdown() is already finishing the job.
  if (!shuttingDown && !(err instanceof StartCancelled)) {
    if (err instanceof PortInUseError) {
      console.error(`\n${err.message}`);
      if (options.portOffset)
        console.error(`(firebase.json ports + PROXYPLANE_PORT_OFFSET=${options.portOffset})`);
      console.error('Stop whatever holds it (another `npm start`?) or set PROXYPLANE_PORT_OFFSET.');
    } else if (err instanceof WildcardPortError) {
      console.error(`\n${err.message}`);
      console.error('Stop it (a system squid: `sudo systemctl disable --now squid`) and start again.');
    } else if (err instanceof StateDirInUseError) {
      // Its logs, certificate and state.json are in that dir: a second plane there would wipe its logs
      // and take the file the CLI reads its tokens from.
      console.error(`\n${err.message}`);
      // A dir named for the offset, ports clear of the running plane's (layout.ts adviceOffset).
      const offset = adviceOffset(options.portOffset, err.other.portOffset, err.stateDir);
      console.error(
        'Stop it first, or give this plane a state dir of its own as well as a port offset, e.g. ' +
          `PROXYPLANE_STATE_DIR=.local-plane/${offset} PROXYPLANE_PORT_OFFSET=${offset} npm start`,
      );
    } else if (err instanceof StateDirRefused) {
      console.error(`\n${err.message}`);
    } else if (err instanceof MissingToolError) {
      // Nothing was started and no log says more: what to install (or fix) is the whole story.
      console.error(`\nthe local plane cannot start: ${err.message}`);
    } else {
      console.error('\nthe local plane failed to start:', err);
      console.error(`logs: ${displayPath(join(options.stateDir, 'logs'))}`);
    }
    await shutdown('start failed', 1);
  }
}
