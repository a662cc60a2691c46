// Preloaded (`node --import`) into every Node process the local plane starts in its own process group:
// such a child is detached from the terminal and from its parent, so if the parent dies without stopping
// it (SIGKILL, an OOM kill, a crash past its handlers) nothing else would ever stop it. A child whose
// parent is gone is re-parented, so its ppid changes: it then shuts down as on SIGTERM (graceful paths
// included — the gateway drains). The SIGTERM is sent once: the services take it with
// `process.once('SIGTERM', …)`, so a second one would meet no handler and end a drain midway. Should the
// graceful path hang, SIGKILL follows after GRACE_MS — as `npm start`'s own stop does after its grace.
// Polled once a second on an unref'd timer: it never keeps a process up. The first poll comes a second
// in, by when the main module has usually registered its SIGTERM handler (if not, the default action ends
// a process that had not started anything yet).
//
// The parent to outlive is the one the launcher names (PARENT_PID_ENV, process-group.ts), not this
// process's ppid as it loads: a parent killed between spawning the child and the child loading this file
// (Node's start-up takes a second on a loaded machine) would leave the child re-parented already, and it
// would take its adoptive parent for its own and never stop. The variable is removed at once, so what
// this process starts does not inherit a pid that is not its parent's.
const PARENT_PID_ENV = 'PROXYPLANE_PARENT_PID';
const GRACE_MS = 15_000;
const parent = Number(process.env[PARENT_PID_ENV]) || process.ppid;
delete process.env[PARENT_PID_ENV];
const poll = setInterval(() => {
  if (process.ppid === parent) return;
  clearInterval(poll);
  setTimeout(() => process.kill(process.pid, 'SIGKILL'), GRACE_MS).unref();
  process.kill(process.pid, 'SIGTERM');
}, 1000);
poll.unref();
