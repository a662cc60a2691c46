// The timing of the worker contract, shared by the API (sessions, reports, registration answer) and the
// snapshot function (grants, drains, usableUntil). Parsed from an env-like record by entry points only;
// defaults per docs/gateway-control-plane.md. The relations checked here are the ones safety rests on.
import { z } from 'zod';
import { envNumber } from '../../config/env.js';

const seconds = (def: number, max = 86_400) => envNumber(z.number().int().min(1).max(max)).default(def);

export const WorkerSettingsEnv = z
  .object({
    WORKER_SESSION_TTL_SECONDS: seconds(30),
    WORKER_REPORT_TTL_SECONDS: seconds(15),
    WORKER_REPORT_INTERVAL_SECONDS: seconds(5),
    WORKER_MAX_STALE_AGE_SECONDS: seconds(150),
    OWNERSHIP_GRANT_SECONDS: seconds(180),
    OWNERSHIP_RENEW_BEFORE_SECONDS: seconds(150),
    ALLOCATION_SAFETY_MARGIN_SECONDS: envNumber(z.number().int().min(0).max(3600)).default(10),
    CLOCK_SKEW_SECONDS: envNumber(z.number().int().min(0).max(300)).default(5),
    /** Re-send the latest full snapshot to a worker whose ACK lags it for this long. */
    SNAPSHOT_RESEND_AFTER_SECONDS: seconds(30),
    /** Workers whose session lapsed longer ago than this are out of the snapshot pass's view (view.ts).
     * Its ceiling is above the grant's (1 day) plus the skew's (300 s), so every grant accepted here has a
     * horizon that covers it (the refine below). */
    WORKER_VIEW_HORIZON_SECONDS: seconds(3600, 2 * 86_400),
    /** The snapshot tick's period: 60 s, the deployed snapshot-tick schedule (schedules.json, held equal
     * by test/terraform/code-contract.test.ts); the local plane sets its own cadence. Read only by the
     * refines below: the passes run when the scheduler fires, whatever this says. */
    SNAPSHOT_TICK_SECONDS: seconds(60, 3600),
  })
  .refine((e) => e.OWNERSHIP_RENEW_BEFORE_SECONDS < e.OWNERSHIP_GRANT_SECONDS, {
    message: 'OWNERSHIP_RENEW_BEFORE_SECONDS must be below OWNERSHIP_GRANT_SECONDS',
  })
  .refine((e) => e.ALLOCATION_SAFETY_MARGIN_SECONDS < e.OWNERSHIP_RENEW_BEFORE_SECONDS, {
    message: 'ALLOCATION_SAFETY_MARGIN_SECONDS must be below OWNERSHIP_RENEW_BEFORE_SECONDS',
  })
  // The two below hold a steady live worker serving: its grant is renewed (grants.ts nextGrant) by the
  // first tick whose pass reads less than RENEW_BEFORE left, so one tick after the last pass that read at
  // least that much. Passes run on whichever instance the tick reaches, and the skew allowance is how far
  // those instances' clocks, and a gateway's, may disagree (docs/gateway-control-plane.md § Ownership grant,
  // renewal and heartbeat). Delivery time is not counted: the defaults leave a minute of room.
  //
  // A renewal is a steady worker's only new snapshot version, and only a new one restarts its stale clock
  // (gateway worker.ts taken), counted on its monotonic clock from the take. A pass reading the grant on a
  // clock that trails the granting one's by the skew renews that much later: renewals come up to
  // GRANT − RENEW_BEFORE + tick + skew apart, which must stay under the max stale age, or every healthy
  // worker answers snapshot_stale for part of each cycle.
  .refine(
    (e) =>
      e.OWNERSHIP_GRANT_SECONDS -
        e.OWNERSHIP_RENEW_BEFORE_SECONDS +
        e.SNAPSHOT_TICK_SECONDS +
        e.CLOCK_SKEW_SECONDS <
      e.WORKER_MAX_STALE_AGE_SECONDS,
    {
      message:
        'OWNERSHIP_GRANT_SECONDS − OWNERSHIP_RENEW_BEFORE_SECONDS + SNAPSHOT_TICK_SECONDS + CLOCK_SKEW_SECONDS must be below WORKER_MAX_STALE_AGE_SECONDS (renewals further apart than the max stale age leave healthy workers stale)',
    },
  )
  // The last pass that did not renew read at least RENEW_BEFORE left; the renewal comes a tick later, with
  // at least RENEW_BEFORE − tick left on that pass's clock, and a gateway clock ahead of it by the skew reads
  // that much less (usableUntil is checked on its wall clock). More than the margin must be left, so a
  // live worker's proxies never pass usableUntil (new picks refused) nor, a fortiori, their grant (every
  // tunnel cut). This also keeps the margin below RENEW_BEFORE (the refine above).
  .refine(
    (e) =>
      e.OWNERSHIP_RENEW_BEFORE_SECONDS >
      e.SNAPSHOT_TICK_SECONDS + e.ALLOCATION_SAFETY_MARGIN_SECONDS + e.CLOCK_SKEW_SECONDS,
    {
      message:
        'OWNERSHIP_RENEW_BEFORE_SECONDS must be above SNAPSHOT_TICK_SECONDS + ALLOCATION_SAFETY_MARGIN_SECONDS + CLOCK_SKEW_SECONDS (a renewal must reach a live worker before its proxies pass usableUntil)',
    },
  )
  // A session lapsed longer ago than the horizon can hold no grant any more (view.ts), whatever the pass
  // reads of it: leaving it unread changes no decision.
  .refine((e) => e.WORKER_VIEW_HORIZON_SECONDS >= e.OWNERSHIP_GRANT_SECONDS + e.CLOCK_SKEW_SECONDS, {
    message: 'WORKER_VIEW_HORIZON_SECONDS must be at least OWNERSHIP_GRANT_SECONDS + CLOCK_SKEW_SECONDS',
  })
  .refine((e) => e.WORKER_REPORT_INTERVAL_SECONDS < e.WORKER_REPORT_TTL_SECONDS, {
    message:
      'WORKER_REPORT_INTERVAL_SECONDS must be below WORKER_REPORT_TTL_SECONDS (a report must arrive before the last one expires)',
  })
  // Reports are what keep a session alive: with a TTL at or near the interval, every session lapses just
  // before its next report (session_expired, register again, a pass, an ACK — every interval). Above two
  // intervals, one report late or lost costs nothing.
  .refine((e) => e.WORKER_SESSION_TTL_SECONDS > 2 * e.WORKER_REPORT_INTERVAL_SECONDS, {
    message:
      'WORKER_SESSION_TTL_SECONDS must be above twice WORKER_REPORT_INTERVAL_SECONDS (one report late or lost must not lapse the session)',
  });

export interface WorkerSettings {
  sessionTtlMs: number;
  reportTtlMs: number;
  reportIntervalSeconds: number;
  maxStaleAgeSeconds: number;
  grantMs: number;
  renewBeforeMs: number;
  allocationSafetyMarginMs: number;
  skewMs: number;
  resendAfterMs: number;
  viewHorizonMs: number;
}

export function loadWorkerSettings(env: Record<string, string | undefined>): WorkerSettings {
  const e = WorkerSettingsEnv.parse(env);
  return {
    sessionTtlMs: e.WORKER_SESSION_TTL_SECONDS * 1000,
    reportTtlMs: e.WORKER_REPORT_TTL_SECONDS * 1000,
    reportIntervalSeconds: e.WORKER_REPORT_INTERVAL_SECONDS,
    maxStaleAgeSeconds: e.WORKER_MAX_STALE_AGE_SECONDS,
    grantMs: e.OWNERSHIP_GRANT_SECONDS * 1000,
    renewBeforeMs: e.OWNERSHIP_RENEW_BEFORE_SECONDS * 1000,
    allocationSafetyMarginMs: e.ALLOCATION_SAFETY_MARGIN_SECONDS * 1000,
    skewMs: e.CLOCK_SKEW_SECONDS * 1000,
    resendAfterMs: e.SNAPSHOT_RESEND_AFTER_SECONDS * 1000,
    viewHorizonMs: e.WORKER_VIEW_HORIZON_SECONDS * 1000,
  };
}

export const DEFAULT_WORKER_SETTINGS: WorkerSettings = loadWorkerSettings({});
