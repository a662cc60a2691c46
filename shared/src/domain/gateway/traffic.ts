// What the gateway's periodic `gateway.traffic` line says (terraform/monitoring.tf counts it): requests by
// outcome class, outcome-queue drops and SUSPECT fallbacks, as DELTAS since the line before. The gateway
// keeps its counts as cumulative per-process integers (gateway_requests_total by listener, route and
// outcome code; the queue's and the worker's plain counts), read only when the line is due: nothing here
// runs per request. Deltas, not totals, so that a restarted worker (its counts back at zero) reads as
// what it served since, never as a spike or a negative.
//
// One place maps the stable codes of docs/gateway.md § Error codes to a small fixed set of classes, so the
// line stays a bounded object whatever codes the listeners grow; a code not listed is `other`.

export const OUTCOME_CLASSES = [
  'ok',
  'noUpstream',
  'noRoute',
  'notAccepting',
  'authRequired',
  'ssrfRefused',
  'clientError',
  'clientClosed',
  'upstreamFailed',
  'targetFailed',
  'other',
] as const;
export type OutcomeClass = (typeof OUTCOME_CLASSES)[number];

const CLASS_OF: Readonly<Record<string, OutcomeClass>> = {
  ok: 'ok',
  // 503: the route has no usable upstream on this worker (none owned, or all at capacity or expired).
  no_upstream: 'noUpstream',
  no_route: 'noRoute',
  // 503: the worker is not serving (no snapshot yet, stale, stopping), or no longer on this request's
  // proxy (its drain outlived GATEWAY_PROXY_DRAIN_TIMEOUT_MS).
  no_snapshot: 'notAccepting',
  snapshot_stale: 'notAccepting',
  shutting_down: 'notAccepting',
  not_accepting: 'notAccepting',
  upstream_withdrawn: 'notAccepting',
  proxy_auth_required: 'authRequired',
  unauthorized: 'authRequired',
  ssrf_refused: 'ssrfRefused',
  bad_request: 'clientError',
  bad_connect_target: 'clientError',
  not_a_proxy_request: 'clientError',
  bad_request_target: 'clientError',
  bad_content_length: 'clientError',
  bad_url: 'clientError',
  credentials_in_url: 'clientError',
  header_timeout: 'clientError',
  chunked_request_body_unsupported: 'clientError',
  body_too_large: 'clientError',
  header_too_large: 'clientError',
  // No answer: the connection is closed, a /v1/fetch having too many pipelined ahead of it (http-app.ts).
  pipelined_too_deep: 'clientError',
  client_closed: 'clientClosed',
  upstream_dial_failed: 'upstreamFailed',
  upstream_handshake_failed: 'upstreamFailed',
  upstream_closed: 'upstreamFailed',
  upstream_auth_failed: 'upstreamFailed',
  upstream_refused: 'upstreamFailed',
  upstream_timeout: 'upstreamFailed',
  target_failed: 'targetFailed',
  target_closed: 'targetFailed',
  target_bad_response: 'targetFailed',
  target_unresolvable: 'targetFailed',
  fetch_timeout: 'targetFailed',
};

/** The class of an outcome code (`ok`, a stable error code or `client_closed`); `other` when unknown. */
export function outcomeClass(code: string): OutcomeClass {
  return Object.hasOwn(CLASS_OF, code) ? CLASS_OF[code]! : 'other';
}

export type OutcomeCounts = Record<OutcomeClass, number>;

export const noOutcomes = (): OutcomeCounts =>
  Object.fromEntries(OUTCOME_CLASSES.map((c) => [c, 0])) as OutcomeCounts;

/** One cumulative request count, as the recorder keeps it. */
export interface RequestCount {
  readonly route: string;
  readonly outcome: string;
  readonly n: number;
  /**
   * The counts of routes the routing no longer has, summed by outcome when the recorder forgot them: in
   * the totals (so no delta goes backwards), under no route (`route` is not read).
   */
  readonly retired?: boolean;
}

/** The worker's cumulative counts at one instant (since the process started). */
export interface TrafficTotals {
  readonly requests: number;
  readonly outcomes: OutcomeCounts;
  /** `no_upstream` answers by route: the route is what an operator must act on. */
  readonly noUpstreamByRoute: ReadonlyMap<string, number>;
  readonly outcomeQueueDrops: number;
  readonly suspectFallbacks: number;
}

/** Sums the recorder's counts (by listener, route and outcome code) into classes. */
export function tallyTraffic(
  counts: Iterable<RequestCount>,
  outcomeQueueDrops: number,
  suspectFallbacks: number,
): TrafficTotals {
  const outcomes = noOutcomes();
  const noUpstreamByRoute = new Map<string, number>();
  let requests = 0;
  for (const c of counts) {
    requests += c.n;
    const cls = outcomeClass(c.outcome);
    outcomes[cls] += c.n;
    if (cls === 'noUpstream' && !c.retired)
      noUpstreamByRoute.set(c.route, (noUpstreamByRoute.get(c.route) ?? 0) + c.n);
  }
  return { requests, outcomes, noUpstreamByRoute, outcomeQueueDrops, suspectFallbacks };
}

/** What one `gateway.traffic` line reports: the counts since the previous line. */
export interface TrafficDelta {
  readonly requests: number;
  readonly outcomes: OutcomeCounts;
  /** The routes with the most `no_upstream` answers, at most MAX_NO_UPSTREAM_ROUTES, most first. */
  readonly noUpstreamRoutes: Record<string, number>;
  readonly outcomeQueueDrops: number;
  readonly suspectFallbacks: number;
}

/** A line names this many routes at most (a route is an admin's name; up to 1,000 of them). */
export const MAX_NO_UPSTREAM_ROUTES = 5;

const since = (now: number, before: number | undefined) => Math.max(0, now - (before ?? 0));

/**
 * The counts since `prev` (null: since the process started, when every count was zero). Never negative: a
 * count below its previous reading (which cumulative counts never are) reads as zero, not as a refund.
 */
export function trafficDelta(prev: TrafficTotals | null, now: TrafficTotals): TrafficDelta {
  const outcomes = noOutcomes();
  for (const c of OUTCOME_CLASSES) outcomes[c] = since(now.outcomes[c], prev?.outcomes[c]);
  const routes = [...now.noUpstreamByRoute]
    .map(([route, n]) => [route, since(n, prev?.noUpstreamByRoute.get(route))] as const)
    .filter(([, n]) => n > 0)
    .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
    .slice(0, MAX_NO_UPSTREAM_ROUTES);
  return {
    requests: since(now.requests, prev?.requests),
    outcomes,
    noUpstreamRoutes: Object.fromEntries(routes),
    outcomeQueueDrops: since(now.outcomeQueueDrops, prev?.outcomeQueueDrops),
    suspectFallbacks: since(now.suspectFallbacks, prev?.suspectFallbacks),
  };
}
