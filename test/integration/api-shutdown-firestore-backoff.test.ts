// A stop signal while a start-up read of Firestore waits out its retry backoff (the emulator slow or
// absent) ends the API cleanly. The Firestore client retries a failed query after a backoff, and a retry
// that finds the client terminated is refused — a rejection the client drops unhandled (its
// requestStream does not await the pool's run): Node exited 1 with "The client has already been
// terminated" and its stack, instead of the exit 0 after the drain. It takes the process still being up
// when the backoff ends: here another read still unanswered (a count of a /metrics scrape its client gave
// up on) holds the client's terminate(), which waits for every call in flight. The real entry point, bundled
// as the local plane runs it, against a scripted Firestore endpoint (test/support) that fails the read of
// every lease state on cue. The API logs at debug so that the refused retry shows (its line is how the test
// knows the path ran before the process exited, and when to let the counts go).
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { bundledEntry } from '../../emulators/launcher/entry-bundle.js';
import { freePort } from '../../emulators/launcher/free-port.js';
import { waitForHttp } from '../../emulators/launcher/wait.js';
import { API_ENTRY } from '../../emulators/local-plane/services.js';
import { repoRoot } from '../../shared/src/config/local-ports.js';
import { testProjectId } from '../support/emulators.js';
import { pollUntil } from '../support/poll.js';
import {
  GrpcStatus,
  type ScriptedFirestore,
  scriptedFirestore,
} from '../support/scripted-firestore-endpoint.js';

const TOKEN = 'backoff-test-crawler-token-0123';
/** What main.ts logs at debug when it drops the terminated client's refusal of a retried read. */
const DROPPED = 'a Firestore call retried after its client was closed; dropped (shutdown)';
/**
 * How long the refused retry may take to show: the client's first backoff is 1 s ± 50 % (its backoff.ts),
 * and the API itself gives up on its clients 3 s into the close (exit 1), which also ends the wait.
 */
const RETRY_SEEN_WITHIN_MS = 5_000;

const children: ChildProcess[] = [];
const endpoints: ScriptedFirestore[] = [];
afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  await Promise.all(endpoints.map((e) => e.close()));
});

describe('API stopped while a start-up read of Firestore is in its retry backoff', () => {
  it.concurrent.each(['SIGTERM', 'SIGINT'] as const)(
    '%s: exits 0, nothing unhandled, no error logged',
    { timeout: 60_000 },
    async (signal) => {
      const firestore = await scriptedFirestore();
      endpoints.push(firestore);
      const port = await freePort();
      const child = spawn(process.execPath, [await bundledEntry(join(repoRoot, API_ENTRY))], {
        env: {
          ...process.env,
          GOOGLE_CLOUD_PROJECT: testProjectId(),
          FIRESTORE_EMULATOR_HOST: firestore.host,
          PORT: String(port),
          HOST: '127.0.0.1',
          LOG_LEVEL: 'debug',
          ADMIN_TOKENS: 'admin:backoff-test-admin-token-0123',
          DISCOVERY_TOKENS: `t:${TOKEN}`,
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      children.push(child);
      let stdout = '';
      let stderr = '';
      child.stdout?.on('data', (d: Buffer) => {
        stdout += d.toString();
      });
      child.stderr?.on('data', (d: Buffer) => {
        stderr += d.toString();
      });
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      const url = `http://127.0.0.1:${port}`;

      // The lease store's read of every lease state, which it starts as the API starts: held for now.
      const loadAll = await firestore.next('RunQuery');
      await waitForHttp(`${url}/healthz`, { timeoutMs: 30_000 });
      // A scrape starts the counts of /metrics, which the endpoint never answers; its client gives up
      // (a scrape timeout), and the counts stay in flight.
      const scrapeGaveUp = new AbortController();
      const scrape = fetch(`${url}/metrics`, {
        headers: { authorization: `Bearer ${TOKEN}` },
        signal: scrapeGaveUp.signal,
      }).catch(() => {});
      await firestore.next('RunAggregationQuery');
      scrapeGaveUp.abort();
      await scrape;
      const listeners = firestore.calls.filter((c) => c.method === 'Listen');
      expect(listeners.length).toBeGreaterThan(0);

      child.kill(signal);
      // The API stops its listeners just before it terminates its Firestore client (wiring.ts close()).
      await pollUntil(
        () => listeners.every((l) => l.clientEnded),
        Boolean,
        15_000,
        "the API's listeners to stop",
        10,
      );
      // The read fails (retryable): the client backs off, then retries into the terminated client…
      loadAll.fail(GrpcStatus.UNAVAILABLE, 'the emulator is not up yet');
      // …while the counts, still in flight, hold the client's terminate() past that backoff. Held until the
      // refusal is seen dropped — or the process is gone (without the fix, the refusal ends it at once) —
      // and no longer: the API allows its clients 3 s from the close's start, a fixed wait ate into that.
      const over = () => child.exitCode !== null || child.signalCode !== null;
      await pollUntil(
        () => stdout.includes(DROPPED) || over(),
        Boolean,
        RETRY_SEEN_WITHIN_MS,
        'the refused retry to be dropped, or the API to exit',
        10,
      );
      // The path under test ran, in a process still up: a retry whose backoff outlived the process would
      // prove nothing.
      expect(
        stdout.includes(DROPPED),
        `no "${DROPPED}" before the API exited (${child.exitCode ?? child.signalCode}); stderr: ${stderr}`,
      ).toBe(true);
      for (const c of firestore.calls)
        if (c.method === 'RunAggregationQuery') c.fail(GrpcStatus.PERMISSION_DENIED);

      const code = await exited;
      expect({ code, stderr }).toEqual({
        code: 0,
        stderr: expect.not.stringMatching(/unhandled|terminated|\n\s+at /i),
      });
      const lines = stdout
        .split('\n')
        .filter((l) => l.trim())
        .map((l) => JSON.parse(l) as { severity: string; message: string });
      expect(lines).toContainEqual(expect.objectContaining({ message: `api stopping (${signal})` }));
      expect(lines.filter((l) => l.severity === 'ERROR')).toEqual([]);
    },
  );
});
