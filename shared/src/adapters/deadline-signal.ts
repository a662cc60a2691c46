// A call's deadline as one AbortSignal: its timeout, or the caller's own signal, whichever comes first.
// AbortSignal.any([AbortSignal.timeout(ms), own]) alone is not that: `any` holds its sources weakly, and
// a timeout signal nothing listens to is collectable with its timer (nodejs/node#57736), so a full garbage
// collection mid-call dropped the timeout — a probe check against a proxy that accepts and never answers
// ran on until the pass gave up on it at its budget, with no failure recorded. A listener on the timeout
// signal makes Node hold it until it fires.
export function deadlineSignal(timeoutMs: number, own?: AbortSignal): AbortSignal {
  const timeout = AbortSignal.timeout(timeoutMs);
  if (!own) return timeout;
  timeout.addEventListener('abort', keepAlive, { once: true });
  return AbortSignal.any([timeout, own]);
}

const keepAlive = () => {};
