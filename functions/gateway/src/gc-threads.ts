// Whether V8 collects garbage on this process's main thread alone (`node --single-threaded-gc`) or also
// on its platform's helper threads (V8's default: parallel scavenges, concurrent marking and sweeping).
// A saturated gateway has no idle core for those helpers — Cloud Run gives it one vCPU, and Node starts
// four V8 helper threads whatever the count — so the parallel work only competes with the requests, plus
// the cost of handing it out and joining it. Side by side on a 2-core machine, the single-threaded
// gateway spent 0.80–1.01× the CPU per request of the default one (median ≈ 0.92) on plain HTTP, CONNECT and
// CONNECT+TLS, and 0.81× the CPU per byte on a long tunnel, at the same or a higher rate (docs/gateway.md
// § GC threads). The price: a scavenge that one thread does alone lasts longer where there are idle cores.
//
// Unlike the marking mode (gc-marking.ts) this cannot be set at run time: v8.setFlagsFromString with it
// after start-up aborted a Node 20 process at its next full GC (V8 already has its concurrent marker). It is a command
// line flag, so the process is started with it: Terraform's gateway_gc_threads (the Cloud Run container's
// args, the CONNECT VMs' `docker run`), the local plane and the benchmarks use SINGLE_THREADED_GC; `node .`
// (the image's own command) keeps V8's default.

/** The Node command-line flag; not accepted in NODE_OPTIONS. */
export const SINGLE_THREADED_GC = '--single-threaded-gc';

export type GcThreads = 'single' | 'parallel';

/** How this process was started, for the start-up log line (and a check that the flag reached it). */
export function gcThreads(execArgv: readonly string[] = process.execArgv): GcThreads {
  return execArgv.includes(SINGLE_THREADED_GC) ? 'single' : 'parallel';
}
