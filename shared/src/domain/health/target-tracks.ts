// TARGET tracks (contract §6): one per routing — `TARGET:<route>` — for a route whose target check the
// probe runs through the proxy. They never make the proxy's own verdict: a site that blocks a proxy makes
// it unfit for that route (target group) only, so their UNHEALTHY ones become the proxy's
// `unreachableRoutes`, which the snapshots turn into `excludedRoutes` (docs/health.md § TARGET).
import type { TrackKey, TrackState } from './verdict.js';

const PREFIX = 'TARGET:';

/** The route a track key is about, or null for BASIC / EGRESS. */
export const targetRouteOf = (key: string): string | null =>
  key.startsWith(PREFIX) ? key.slice(PREFIX.length) : null;

/** The routes whose TARGET track is UNHEALTHY, sorted. */
export function unreachableRoutesOf(tracks: Partial<Record<TrackKey, TrackState>>): string[] {
  const routes: string[] = [];
  for (const [key, track] of Object.entries(tracks)) {
    const route = targetRouteOf(key);
    if (route !== null && track?.verdict === 'UNHEALTHY') routes.push(route);
  }
  return routes.sort();
}

/**
 * The tracks without the TARGET ones that no longer apply to the proxy (`applicable`: the keys of the
 * checks run through it this tick — target-checks.ts). Null when the routing could not be read: then
 * nobody knows which apply, and every track stays as it is.
 */
export function withoutStaleTargets(
  tracks: Partial<Record<TrackKey, TrackState>>,
  applicable: ReadonlySet<TrackKey> | null,
): Partial<Record<TrackKey, TrackState>> {
  if (applicable === null) return tracks;
  const out: Partial<Record<TrackKey, TrackState>> = {};
  for (const [key, track] of Object.entries(tracks) as Array<[TrackKey, TrackState]>) {
    if (targetRouteOf(key) === null || applicable.has(key)) out[key] = track;
  }
  return out;
}

export const sameRoutes = (a: readonly string[], b: readonly string[]): boolean =>
  a.length === b.length && a.every((r, i) => r === b[i]);
