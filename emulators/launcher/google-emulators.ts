// Starts the Google Cloud SDK's Firestore and Pub/Sub emulators directly (no gcloud Python wrapper, no
// firebase-tools: see ../shared/design/gcp-offline-recipes.md §4 and §8), waits until each answers, and
// stops each with its whole process group so that no JVM is left behind.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { HostPort } from '../../shared/src/config/local-ports.js';
import { type GroupProcess, startGroup } from './process-group.js';
import { emulatorPayloads, javaBinary } from './sdk.js';
import { waitForHttp } from './wait.js';

// C1-only JIT and the serial GC start both JVMs ~30 % faster and smaller on a 2-core machine.
const FAST_JVM = '-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xshare:auto';

export interface GoogleEmulators {
  firestore: HostPort;
  pubsub: HostPort;
  /** Environment every client and child process needs to talk to these emulators. */
  env: Record<string, string>;
  /**
   * Each emulator's end. Readiness is watched only until the start returns: a JVM that dies later (out of
   * memory, killed) is said here, or every client of the plane just fails with no word of why.
   */
  exits: Array<{ name: string; exited: Promise<{ code: number | null }> }>;
  stop(): Promise<void>;
}

export interface GoogleEmulatorOptions {
  firestore: HostPort;
  pubsub: HostPort;
  projectId: string;
  logDir?: string;
  timeoutMs?: number;
  /** Aborting it while the JVMs start stops whatever was spawned and rejects with StartAborted. */
  signal?: AbortSignal;
}

export class StartAborted extends Error {
  readonly kind = 'start_aborted';
}

export function emulatorEnv(
  firestore: HostPort,
  pubsub: HostPort,
  projectId: string,
): Record<string, string> {
  return {
    FIRESTORE_EMULATOR_HOST: `${firestore.host}:${firestore.port}`,
    PUBSUB_EMULATOR_HOST: `${pubsub.host}:${pubsub.port}`,
    PUBSUB_PROJECT_ID: projectId,
    GCLOUD_PROJECT: projectId,
    GOOGLE_CLOUD_PROJECT: projectId,
    METADATA_SERVER_DETECTION: 'none',
  };
}

export async function startGoogleEmulators(opts: GoogleEmulatorOptions): Promise<GoogleEmulators> {
  if (opts.firestore.host === opts.pubsub.host && opts.firestore.port === opts.pubsub.port)
    throw new Error(
      `the Firestore and Pub/Sub emulators cannot share ${opts.firestore.host}:${opts.firestore.port}`,
    );
  const java = javaBinary();
  const { firestoreJar, pubsubBin } = emulatorPayloads();
  if (opts.logDir) mkdirSync(opts.logDir, { recursive: true });
  const log = (name: string) => (opts.logDir ? join(opts.logDir, `${name}.log`) : undefined);
  const started: GroupProcess[] = [];
  const stop = async () => {
    await Promise.all(started.map((p) => p.stop()));
  };
  const aborted = new Promise<never>((_, reject) => {
    const fail = () => reject(new StartAborted('the emulators were stopped while starting'));
    if (opts.signal?.aborted) fail();
    else opts.signal?.addEventListener('abort', fail, { once: true });
  });
  aborted.catch(() => {});
  try {
    opts.signal?.throwIfAborted();
    started.push(
      startGroup({
        name: 'firestore',
        command: java,
        args: [
          ...FAST_JVM.split(' '),
          '-Duser.language=en',
          '-cp',
          firestoreJar,
          'com.google.cloud.datastore.emulator.firestore.CloudFirestore',
          'start',
          `--host=${opts.firestore.host}`,
          `--port=${opts.firestore.port}`,
        ],
        logFile: log('firestore'),
        exitWithParent: true,
      }),
    );
    started.push(
      startGroup({
        name: 'pubsub',
        command: pubsubBin,
        args: [`--host=${opts.pubsub.host}`, `--port=${opts.pubsub.port}`],
        env: { JAVA_OPTS: FAST_JVM, JAVA: java },
        logFile: log('pubsub'),
        exitWithParent: true,
      }),
    );
    const timeoutMs = opts.timeoutMs ?? 60_000;
    const [firestore, pubsub] = started as [GroupProcess, GroupProcess];
    await Promise.race([
      aborted,
      Promise.all([
        readyOrExited(
          firestore,
          `http://${opts.firestore.host}:${opts.firestore.port}/`,
          timeoutMs,
          log('firestore'),
        ),
        readyOrExited(pubsub, `http://${opts.pubsub.host}:${opts.pubsub.port}/`, timeoutMs, log('pubsub')),
      ]),
    ]);
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    firestore: opts.firestore,
    pubsub: opts.pubsub,
    env: emulatorEnv(opts.firestore, opts.pubsub, opts.projectId),
    exits: started.map((p) => ({ name: p.name, exited: p.exited })),
    stop,
  };
}

/** Ready when the URL answers; an emulator that exits first (a port already in use, a bad flag) fails at
 *  once with where to look, instead of waiting out the timeout — or worse, another server answering. */
async function readyOrExited(
  p: GroupProcess,
  url: string,
  timeoutMs: number,
  logFile?: string,
): Promise<void> {
  const stopWatching = new AbortController();
  const exited = new Promise<never>((_, reject) => {
    const onExit = (code: number | null) =>
      reject(
        new Error(
          `the ${p.name} emulator exited (code ${code}) before it was ready${logFile ? `; see ${logFile}` : ''}`,
        ),
      );
    if (p.child.exitCode !== null) onExit(p.child.exitCode);
    p.child.once('exit', onExit);
    stopWatching.signal.addEventListener('abort', () => p.child.off('exit', onExit));
  });
  try {
    await Promise.race([waitForHttp(url, { timeoutMs }), exited]);
    // Something else on the port (an emulator left over) can answer before ours fails to bind.
    if (p.child.exitCode !== null || p.child.signalCode !== null)
      throw new Error(`the ${p.name} emulator exited while ${url} answered: is another one running there?`);
  } finally {
    stopWatching.abort();
  }
}
