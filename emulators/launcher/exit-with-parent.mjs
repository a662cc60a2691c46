// Preloaded (`node --import`) into every Node process the local plane starts in its own process group:
// such a child is detached from the terminal and from its parent, so if the parent dies without stopping
// it (SIGKILL, an OOM kill, a crash past its handlers) nothing else would ever stop it. A child whose
// parent is gone is re-parented, so its ppid changes: it then shuts down as on SIGTERM (graceful paths
// included — the gateway drains). Polled once a second on an unref'd timer: it never keeps a process up.
const parent = process.ppid;
setInterval(() => {
  if (process.ppid !== parent) process.kill(process.pid, 'SIGTERM');
}, 1000).unref();
