// Which TARGET checks (contract §6: reachability per Routing / target group) the probe runs through one
// proxy: every stored route with a `targetCheck` whose selector selects the proxy, by the gateways' own
// rule (`selects`, domain/gateway/routing.ts) — a proxy is judged for exactly the routes a gateway could
// pick it for. The keys of those checks are the TARGET tracks that apply to the proxy this tick;
// decideHealth drops the others (route gone, check removed, selector no longer selecting it).
import type { RoutingRule } from '../../messages/gateway-snapshot.js';
import { selects } from '../gateway/routing.js';
import { type TrackKey, trackKey } from './verdict.js';

export interface RouteTargetCheck {
  route: string;
  url: string;
  expectedStatus: number;
}

/** The checks to run through a proxy with these attributes, in routing order. */
export function targetChecksFor(
  routes: readonly RoutingRule[],
  attributes: Readonly<Record<string, string>>,
): RouteTargetCheck[] {
  return routes.flatMap((r) =>
    r.targetCheck && selects(r.selector ?? {}, attributes)
      ? [{ route: r.name, url: r.targetCheck.url, expectedStatus: r.targetCheck.expectedStatus }]
      : [],
  );
}

/** The TARGET track keys these checks feed: the set decideHealth keeps. */
export const targetKeysOf = (checks: readonly RouteTargetCheck[]): ReadonlySet<TrackKey> =>
  new Set(checks.map((c) => trackKey('TARGET', c.route)));
