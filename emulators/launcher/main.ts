// `npm run emulators`: the Google emulators alone on the firebase.json ports (plus PROXYPLANE_PORT_OFFSET,
// as `npm start`), until Ctrl-C, SIGTERM or the terminal closing (SIGHUP).
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadLocalPorts } from '../../shared/src/config/local-ports.js';
import { OptionsError, portOffsetFrom } from '../local-plane/options.js';
import { assertPortsFree, offsetPorts, PortInUseError } from '../local-plane/ports.js';
import { type GoogleEmulators, StartAborted, startGoogleEmulators } from './google-emulators.js';
import { MissingToolError } from './sdk.js';
import { onShutdown } from './shutdown-signals.js';

// Stopping two JVMs takes a few seconds; never longer than this, whatever hangs.
const STOP_DEADLINE_MS = 30_000;

let offset = 0;
try {
  offset = portOffsetFrom(process.env);
} catch (err) {
  if (!(err instanceof OptionsError)) throw err;
  console.error(err.message);
  process.exit(2);
}
const ports = offsetPorts(loadLocalPorts(), offset);
const projectId = process.env.GOOGLE_CLOUD_PROJECT || 'demo-proxyplane';

// The emulators run detached (their own process groups, so a stop reaches the JVMs behind the shell
// wrappers); a signal's default action would end this process and leave them running. So the handlers
// are in place before anything is spawned, and a signal during the start aborts it: the start stops
// what it spawned before it rejects.
const abort = new AbortController();
let emus: GoogleEmulators | undefined;
let starting: Promise<unknown> = Promise.resolve();
let stopping = false;

async function shutdown(reason: string, exitCode: number): Promise<void> {
  if (stopping) return;
  stopping = true;
  console.error(`${reason}: stopping the emulators`);
  setTimeout(() => {
    console.error(`stopping took over ${STOP_DEADLINE_MS / 1000}s; exiting`);
    process.exit(1);
  }, STOP_DEADLINE_MS).unref();
  abort.abort();
  await starting.catch(() => {});
  await emus?.stop();
  process.exit(exitCode);
}

onShutdown((why, code) => void shutdown(why, code));

try {
  // A port something else holds would let the old server answer the readiness check while our JVM
  // fails to bind: refuse up front, as `npm start` does.
  await assertPortsFree([
    { ...ports.firestore, key: 'emulators.firestore.port' },
    { ...ports.pubsub, key: 'emulators.pubsub.port' },
  ]);
  // The JVMs' own output (why one died, a port it could not bind) goes to files, one directory per port
  // offset and user, emptied at each start (the ports just checked free mean no other launcher of this
  // offset runs). The user's id in the name: in /tmp (sticky) one user's dir, left after a stop, refused
  // another's start with EACCES.
  const logDir = join(tmpdir(), `proxyplane-emulators-${process.getuid?.() ?? 'user'}-${offset}`);
  rmSync(logDir, { recursive: true, force: true });
  console.error(`emulator logs: ${logDir}`);
  const start = startGoogleEmulators({
    firestore: ports.firestore,
    pubsub: ports.pubsub,
    projectId,
    logDir,
    signal: abort.signal,
  });
  starting = start;
  emus = await start;
  for (const [k, v] of Object.entries(emus.env)) console.log(`export ${k}=${v}`);
} catch (err) {
  if (!stopping && !(err instanceof StartAborted)) {
    if (err instanceof PortInUseError) {
      console.error(err.message);
      console.error(
        'Stop whatever holds it (another `npm run emulators` or `npm start`?) or set PROXYPLANE_PORT_OFFSET.',
      );
      process.exit(2);
    }
    // A missing tool is the user's to install: its message says how, and a stack trace only buries it.
    console.error('the emulators failed to start:', err instanceof MissingToolError ? err.message : err);
    await shutdown('start failed', 1);
  }
}
