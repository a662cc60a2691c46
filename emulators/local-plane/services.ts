// The two long-lived services of the plane besides the functions: the Hono API (its own process, as on
// Cloud Run) and the local scheduler with its Cloud Scheduler REST front end (in this process).
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { SINGLE_THREADED_GC } from '../../functions/gateway/src/gc-threads.js';
import { repoRoot } from '../../shared/src/config/local-ports.js';
import { loadScheduleTable } from '../../shared/src/config/topology.js';
import { jsonLineLog } from '../compute/log.js';
import { type ExitInfo, startReadyProcess } from '../functions-host/ready-process.js';
import { bundledEntry } from '../launcher/entry-bundle.js';
import { waitForHttp } from '../launcher/wait.js';
import { jobsFromTable } from '../scheduler/jobs.js';
import { LocalScheduler, type TickPublisher } from '../scheduler/local-scheduler.js';
import { startSchedulerServer } from '../scheduler/server.js';
import { appendLines } from './log-file.js';

export const API_ENTRY = 'functions/api/src/main.ts';
export const GATEWAY_ENTRY = 'functions/gateway/src/main.ts';

/**
 * How long the API and the gateway get to stop before SIGKILL: Cloud Run's 10 s, which each one's own
 * shutdown is built to fit (the API's 4 s grace and 3 s to close its clients; the gateway's drain, final
 * report, pull close and closers, docs/gateway.md § Shutdown), and a second more. At the launcher's 5 s
 * a Ctrl-C with a tunnel open killed the gateway in its drain, before its final report.
 */
export const SERVICE_STOP_GRACE_MS = 11_000;

export interface RunningService {
  url: string;
  exited: Promise<ExitInfo>;
  stop(): Promise<void>;
}

export async function startApi(opts: {
  host: string;
  port: number;
  env: Record<string, string>;
  logDir: string;
  onSpawn?: (stop: () => Promise<void>) => void;
}): Promise<RunningService> {
  const entry = join(repoRoot, API_ENTRY);
  if (!existsSync(entry)) throw new Error(`${API_ENTRY} is missing`);
  const url = `http://${opts.host}:${opts.port}`;
  const proc = await startReadyProcess({
    name: 'api',
    command: process.execPath,
    args: [await bundledEntry(entry)],
    cwd: repoRoot,
    env: { ...opts.env, PORT: String(opts.port), HOST: opts.host },
    logFile: join(opts.logDir, 'api.log'),
    onSpawn: opts.onSpawn,
    stopGraceMs: SERVICE_STOP_GRACE_MS,
    ready: () => waitForHttp(`${url}/healthz`, { timeoutMs: 60_000 }),
  });
  return { url, exited: proc.exited, stop: proc.stop };
}

/** The gateway worker in controller mode (its own process, as on Cloud Run): ready once it listens. */
export async function startGatewayService(opts: {
  host: string;
  proxyPort: number;
  httpPort: number;
  env: Record<string, string>;
  logDir: string;
  onSpawn?: (stop: () => Promise<void>) => void;
}): Promise<RunningService> {
  const url = `http://${opts.host}:${opts.httpPort}`;
  const proc = await startReadyProcess({
    name: 'gateway',
    command: process.execPath,
    // Started as Terraform starts it (functions/gateway/src/gc-threads.ts).
    args: [SINGLE_THREADED_GC, await bundledEntry(join(repoRoot, GATEWAY_ENTRY))],
    cwd: repoRoot,
    env: {
      ...opts.env,
      HOST: opts.host,
      PORT: String(opts.httpPort),
      GATEWAY_PROXY_PORT: String(opts.proxyPort),
    },
    logFile: join(opts.logDir, 'gateway.log'),
    onSpawn: opts.onSpawn,
    stopGraceMs: SERVICE_STOP_GRACE_MS,
    ready: () => waitForHttp(`${url}/healthz`, { timeoutMs: 60_000 }),
  });
  return { url, exited: proc.exited, stop: proc.stop };
}

export interface RunningScheduler {
  url: string;
  jobs: number;
  scheduler: LocalScheduler;
  stop(): Promise<void>;
}

export async function startScheduler(opts: {
  host: string;
  port: number;
  projectId: string;
  location: string;
  speed: number;
  publisher: TickPublisher;
  logFile: string;
}): Promise<RunningScheduler> {
  const jobs = jobsFromTable(loadScheduleTable());
  // A failed tick is logged, not fatal: the next one comes anyway, as with Cloud Scheduler.
  const log = jsonLineLog('scheduler', appendLines(opts.logFile));
  const onError = (job: string, err: unknown) =>
    log('WARNING', `tick of ${job} failed: ${err instanceof Error ? err.message : String(err)}`, { job });
  const scheduler = new LocalScheduler(jobs, opts.publisher, { speed: opts.speed, onError });
  const server = await startSchedulerServer(scheduler, opts);
  scheduler.start();
  return {
    url: server.url,
    jobs: jobs.length,
    scheduler,
    async stop() {
      await scheduler.stop();
      await server.stop();
    },
  };
}
