// A session that lapses before the worker's first snapshot (docs/gateway.md § Controller session): the
// pass its registration asked for never ran (no snapshot function here; in production a failed pass, or a
// registration retried after its pass request failed, which resumes the session and asks for none), and
// the snapshot function builds snapshots only for live sessions. Without an ACK bound the worker reports
// nothing, so no call of its own kept the session alive — and none told it the session was gone: it waited
// for a snapshot for ever. Now, past the session TTL with nothing accepted, it fetches the latest snapshot,
// is answered session_expired by the real API, and registers again (a new session, a new pass requested).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testProjectId } from '../support/emulators.js';
import { type GatewayPlane, startGatewayPlane } from '../support/gateway-plane.js';
import { pollUntil } from '../support/poll.js';

const WORKER = 'gw-lapse';

let gp: GatewayPlane;

beforeAll(async () => {
  gp = await startGatewayPlane({
    projectId: testProjectId('demo-gwlapse'),
    workerIds: [WORKER],
    snapshotFunction: false,
    env: {
      WORKER_SESSION_TTL_SECONDS: '6',
      WORKER_REPORT_TTL_SECONDS: '3',
      WORKER_REPORT_INTERVAL_SECONDS: '1',
    },
  });
}, 120_000);

afterAll(async () => {
  await gp?.stop();
});

describe('a session that lapses before the first snapshot', () => {
  it('is found lapsed once its TTL has passed, and the worker registers again', async () => {
    const gw = await gp.gatewayUntil(WORKER, 'registered with the control plane', {
      GATEWAY_START_WAIT_SECONDS: '1',
    });
    const sessions = () =>
      gw
        .logEntries()
        .filter((l) => l.message === 'registered with the control plane')
        .map((l) => l.sessionId as string);
    const [first] = sessions();
    expect(first).toBeTruthy();
    // The GET a few seconds after registering (nothing on the pull) is answered 404 no_snapshot while the
    // session (6 s) is still live: from then on, only the session's lapse can tell the worker anything.
    const later = await pollUntil(
      async () => sessions(),
      (s) => s.length >= 2,
      20_000,
      'the gateway to register again after its session lapsed',
    );
    expect(later[1]).not.toBe(first);
    const messages = gw.logEntries().map((l) => l.message);
    expect(messages).toContain('nothing accepted on this session for its TTL: fetching the latest snapshot');
  }, 60_000);
});
