// SIGTERM during the gateway's start wait (docs/gateway.md § Shutdown): Cloud Run scales in, or replaces,
// an instance that has registered with the control plane but has no snapshot yet. The gateway as its own
// process in controller mode against the real API on the emulators; no snapshot function runs, so no
// snapshot ever comes and the worker stays in its start wait until the signal. It must end at once and
// cleanly (exit 0, well inside Cloud Run's 10 s), after a draining report the API accepted — before any
// ACK, the one report it takes (shared/src/domain/workers/runtime-report.ts) — so the planner hands the
// worker's proxies over at its next pass instead of after their grant lapses.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testProjectId } from '../support/emulators.js';
import { type GatewayPlane, startGatewayPlane } from '../support/gateway-plane.js';

const WORKER = 'gw-sw';

let gp: GatewayPlane;

beforeAll(async () => {
  gp = await startGatewayPlane({
    projectId: testProjectId('demo-gwsw'),
    workerIds: [WORKER],
    snapshotFunction: false,
  });
}, 120_000);

afterAll(async () => {
  await gp?.stop();
});

type WorkerView = { workerId: string; draining: boolean; lastReportSequence: number | null };

describe('SIGTERM during the start wait', () => {
  it('reports draining to the control plane and exits 0 at once; a second signal changes nothing', async () => {
    const gw = await gp.gatewayUntil(WORKER, 'registered with the control plane', {
      GATEWAY_START_WAIT_SECONDS: '60',
    });
    const before = await gp.admin<{ workers: WorkerView[] }>('GET', '/v1/gateway/workers');
    expect(before.body.workers.find((w) => w.workerId === WORKER)).toMatchObject({
      draining: false,
      lastReportSequence: null,
    });
    const t0 = Date.now();
    gw.child.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 50));
    gw.child.kill('SIGTERM');
    const code = await gw.exited;
    const tookMs = Date.now() - t0;
    expect(code).toBe(0);
    // The contract is Cloud Run's 10 s grace, less a margin. The shutdown as designed takes up to ~3.5 s
    // here by itself (final report ≤ 2 s, pull close ≤ 1 s, closers ≤ 0.5 s: process-shutdown.ts,
    // session-settings.ts), so the 5 s it was held to left a loaded runner 1.5 s for the rest. Still far
    // below the 60 s start wait: a gateway that waited for start-up to finish fails this.
    expect(tookMs, 'SIGTERM to exit').toBeLessThan(9_000);
    const messages = gw.logEntries().map((l) => l.message);
    expect(messages).not.toContain('gateway listening');
    expect(messages.filter((m) => m === 'shutting down')).toHaveLength(1);
    expect(messages).toContain('stopped');
    const after = await gp.admin<{ workers: WorkerView[] }>('GET', '/v1/gateway/workers');
    // The report at once when shutdown began, then the final one: both accepted.
    const me = after.body.workers.find((w) => w.workerId === WORKER)!;
    expect(me.draining).toBe(true);
    expect(me.lastReportSequence).toBeGreaterThanOrEqual(1);
  });
});
