// What the listeners record, as a small interface (the seed's "each consumer declares a recorder"), and
// its prom-client implementation served on /metrics. Request counts are plain integers in a map, handed
// to prom-client only when /metrics is scraped: prom-client hashes and validates labels on every inc(),
// which is more than the rest of a request's bookkeeping.
import { Counter, collectDefaultMetrics, Gauge, Registry } from 'prom-client';
import type { RequestCount } from '../../../shared/src/domain/gateway/traffic.js';

export type Listener = 'proxy' | 'fetch';

export interface GatewayRecorder {
  request(listener: Listener, route: string, outcome: string): void;
  ssrfRefused(listener: Listener, reason: string): void;
  /** A request whose dial was refused went to another proxy of its route (proxy-session.ts redial). */
  redialed(listener: Listener): void;
  outcomeDropped(): void;
}

export interface GatewayGauges {
  activeTunnels(): number;
  reserved(): number;
  openSockets(): Record<string, number>;
  snapshotAgeSeconds(): number | null;
  snapshotVersion(): number | null;
  accepting(): boolean;
  outcomeQueueSize(): number;
  /** Upstreams of the applied snapshot marked SUSPECT, null without a snapshot. */
  suspectUpstreams(): number | null;
  /** Picks that fell back to a SUSPECT upstream (a count kept by the worker, read when scraped). */
  suspectFallbacks(): number;
  /** Proxy-listener connections closed at accept, their source at its share (pre-auth-gate.ts); absent: 0. */
  preAuthRefusals?(): number;
}

export class PromRecorder implements GatewayRecorder {
  readonly registry = new Registry();
  private readonly countsByKey = new Map<
    string,
    { labels: Record<'listener' | 'route' | 'outcome', string>; n: number }
  >();
  /** Counts of routes no longer in the routing, by outcome: kept for the traffic line's totals only. */
  private readonly retired = new Map<string, number>();
  private readonly ssrf: Counter<'listener' | 'reason'>;
  private readonly redials: Counter<'listener'>;
  private readonly dropped: Counter;
  private readonly expired: Counter;

  constructor(gauges: GatewayGauges) {
    const registers = [this.registry];
    // prom-client samples event-loop lag with a libuv timer every 10 ms by default: 100 wake-ups a second
    // of an otherwise idle loop, each paid by the requests around it. 100 ms still shows a stalled loop.
    collectDefaultMetrics({ register: this.registry, eventLoopMonitoringPrecision: 100 });
    const counts = this.countsByKey;
    new Counter({
      name: 'gateway_requests_total',
      help: 'Requests by listener, route and outcome (ok or the stable error code).',
      labelNames: ['listener', 'route', 'outcome'],
      registers,
      collect() {
        this.reset();
        for (const c of counts.values()) this.inc(c.labels, c.n);
      },
    });
    this.ssrf = new Counter({
      name: 'gateway_ssrf_refusals_total',
      help: 'Targets refused by the SSRF guard, by reason.',
      labelNames: ['listener', 'reason'],
      registers,
    });
    this.redials = new Counter({
      name: 'gateway_redials_total',
      help: 'Requests whose dial to an upstream was refused before it took a byte, sent to another upstream of the route.',
      labelNames: ['listener'],
      registers,
    });
    new Counter({
      name: 'gateway_suspect_fallbacks_total',
      help: "Requests sent to a SUSPECT upstream because none of the route's sound ones was usable.",
      registers,
      collect() {
        this.reset();
        this.inc(gauges.suspectFallbacks());
      },
    });
    new Counter({
      name: 'gateway_preauth_refusals_total',
      help: 'Proxy-listener connections closed at accept: their source address held GATEWAY_MAX_PREAUTH_PER_SOURCE connections not yet admitted.',
      registers,
      collect() {
        this.reset();
        this.inc(gauges.preAuthRefusals?.() ?? 0);
      },
    });
    this.dropped = new Counter({
      name: 'gateway_outcome_queue_dropped_total',
      help: 'Outcome samples dropped because the report queue was full (successes before failures).',
      registers,
    });
    this.expired = new Counter({
      name: 'gateway_outcomes_expired_total',
      help: 'Outcome samples dropped unsent: the controller did not take them before they were too old to report.',
      registers,
    });
    const gauge = (name: string, help: string, read: () => number | null) =>
      new Gauge({
        name,
        help,
        registers,
        collect() {
          const v = read();
          if (v === null) this.reset();
          else this.set(v);
        },
      });
    gauge('gateway_active_tunnels', 'Requests past the upstream handshake.', gauges.activeTunnels);
    gauge('gateway_reserved_requests', 'Requests dialling or handshaking with an upstream.', gauges.reserved);
    gauge(
      'gateway_snapshot_age_seconds',
      'Seconds since the applied snapshot was generated.',
      gauges.snapshotAgeSeconds,
    );
    gauge(
      'gateway_suspect_upstreams',
      'Upstreams of the applied snapshot whose health verdict is SUSPECT (picked last).',
      gauges.suspectUpstreams,
    );
    gauge('gateway_snapshot_version', 'Version of the applied snapshot.', gauges.snapshotVersion);
    gauge('gateway_accepting', '1 while new traffic is accepted (fresh snapshot, not shutting down).', () =>
      gauges.accepting() ? 1 : 0,
    );
    gauge('gateway_outcome_queue_size', 'Outcome samples waiting for the reporter.', gauges.outcomeQueueSize);
    new Gauge({
      name: 'gateway_open_sockets',
      help: 'Open sockets by kind.',
      labelNames: ['kind'],
      registers,
      collect() {
        for (const [kind, n] of Object.entries(gauges.openSockets())) this.set({ kind }, n);
      },
    });
  }

  request(listener: Listener, route: string, outcome: string): void {
    const key = `${listener}\n${route}\n${outcome}`;
    const c = this.countsByKey.get(key);
    if (c) c.n++;
    else this.countsByKey.set(key, { labels: { listener, route, outcome }, n: 1 });
  }

  ssrfRefused(listener: Listener, reason: string): void {
    this.ssrf.labels(listener, reason).inc();
  }

  redialed(listener: Listener): void {
    this.redials.labels(listener).inc();
  }

  outcomeDropped(): void {
    this.dropped.inc();
  }

  /** Off the hot path: the reporter drops a batch's stale outcomes at once (control/reporting.ts). */
  outcomesExpired(n: number): void {
    this.expired.inc(n);
  }

  /**
   * Forgets the counts of every route but `live` (and `-`, no route picked): called when a snapshot is
   * swapped in and on the gateway's minute sweep (a request that picked a route before the swap may count
   * under it after), never per request. A route deleted from the routing kept its gateway_requests_total
   * series, and its map entries, for the life of the process. The forgotten counts stay in the traffic
   * line's totals (as retired, under no route), so its deltas neither drop nor go backwards.
   */
  forgetRoutesBut(live: ReadonlySet<string>): void {
    for (const [key, c] of this.countsByKey) {
      if (c.labels.route === '-' || live.has(c.labels.route)) continue;
      this.countsByKey.delete(key);
      this.retired.set(c.labels.outcome, (this.retired.get(c.labels.outcome) ?? 0) + c.n);
    }
  }

  /**
   * The cumulative request counts, as gateway_requests_total would show them, plus those of forgotten
   * routes: read by the `gateway.traffic` line when it is due (traffic-log.ts), never per request.
   */
  *requestCounts(): IterableIterator<RequestCount> {
    for (const c of this.countsByKey.values())
      yield { route: c.labels.route, outcome: c.labels.outcome, n: c.n };
    for (const [outcome, n] of this.retired) yield { route: '', outcome, n, retired: true };
  }
}
