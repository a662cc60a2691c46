// Which workers a snapshot pass (and the admin views) read: those "in view" — a session valid after
// now − horizon, or a snapshot header granting something after it. Everything else is a worker that has
// been gone for longer than the horizon; reading it cost one document per dead gateway instance on every
// pass (Cloud Run registers a new worker id per instance) and could change no decision:
//   - the planner builds snapshots and counts reports only for live sessions (plan-pass.ts, drain.ts);
//   - a lapsed worker matters only through its grant, and a grant is renewed only while the pass sees the
//     session live (grants.ts: nextGrant), so it ends before validUntil + grantMs. With the horizon
//     ≥ grantMs + skewMs (settings.ts), a session lapsed before the cutoff holds a grant that
//     grantLapsed() already treats as over — exactly what the planner does with an owner it has no view
//     of (ownership.ts: grantLapsed(undefined) is true), so its records move as they would have anyway;
//   - a header whose grant reaches past the cutoff is read whatever its worker document says (the
//     "ghost" case: a worker document deleted while its grant lasts), so no grant is ever overlooked.
import type { WorkerSettings } from './settings.js';

/** Sessions valid after, and grants lasting past, this instant are in view. */
export const viewCutoff = (now: Date, s: Pick<WorkerSettings, 'viewHorizonMs'>): Date =>
  new Date(now.getTime() - s.viewHorizonMs);
