// Leads the process group of a command that is not Node (the Firestore emulator's JVM, the Pub/Sub
// emulator's shell wrapper and its JVM), so that the group stops when the process that started it is
// gone — a SIGKILLed `npm start`, a test runner exiting without its teardown — as a Node child does with
// exit-with-parent.mjs, which this script is preloaded with. It runs the command in its own group, passes
// its exit code on, and on SIGTERM (from exit-with-parent, or the launcher stopping the group) asks the
// whole group to stop, then kills it if it has not within GRACE_MS: shorter than exit-with-parent's own
// grace, which would SIGKILL this process alone and leave the command running.
// Usage: node --import ./exit-with-parent.mjs ./group-leader.mjs <command> [args…]
import { spawn } from 'node:child_process';
import { constants } from 'node:os';

const GRACE_MS = 10_000;
const [command, ...args] = process.argv.slice(2);
if (!command) {
  console.error('group-leader: no command given');
  process.exit(2);
}
const child = spawn(command, args, { stdio: 'inherit' });
let stopping = false;
child.on('error', (err) => {
  console.error(`group-leader: cannot run ${command}: ${err.message}`);
  process.exit(127);
});
child.on('exit', (code, signal) => {
  // Stopping, the command's exit ends the group: whatever it started that outlasts it (one that ignores
  // SIGTERM) would otherwise outlive this process and its grace timer.
  if (stopping) group('SIGKILL');
  process.exit(code ?? 128 + (constants.signals[signal] ?? 0));
});

const group = (signal) => {
  try {
    process.kill(-process.pid, signal);
  } catch {
    // ESRCH: the group is gone already.
  }
};
process.once('SIGTERM', () => {
  stopping = true;
  // The group's own SIGTERM reaches this process again: it must not end it before the command has.
  process.on('SIGTERM', () => {});
  group('SIGTERM');
  setTimeout(() => group('SIGKILL'), GRACE_MS).unref();
});
