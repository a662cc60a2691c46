# What an operator must hear about (docs/operations.md says what to do about each). Functions and
# services log one JSON object per line; Cloud Logging parses it into jsonPayload, and these metrics count
# lines by their `event` field — the log contract the code keeps:
#   proxy.failed             reconcile, when a proxy's phase becomes Failed      {proxy, failureReason, detail}
#   proxy.cloud_init_error   reconcile, each pass of a managed proxy whose credentials cannot be read
#                                                                                {proxy, branch, detail}
#   provider.quota_exceeded  reconcile, when the provider reports quota          {proxy, zone}
#   proxy.boot_slow          reconcile, each pass of a managed proxy whose instance has been booting over
#                            20 minutes (PENDING for capacity, STAGING, REPAIRING)   {proxy, zone, bootingMinutes}
#   gc.deleted               gc, for each orphan instance it deletes             {providerId, uid, zone}
#   gateway.snapshot_age     each gateway worker, every 30 s                     {workerId, ageSeconds}
#   gateway.traffic          each gateway worker, every 30 s and once at shutdown: what it served since its
#                            line before (deltas, so a restart is no spike), zeros included
#                            {workerId, requests, outcomes.noUpstream, outcomeQueueDrops, suspectFallbacks}
#                            outcomes holds every class (ok, authRequired, upstreamFailed, …); the metrics
#                            read noUpstream only; the line adds {noUpstreamRoutes, activeTunnels}
#   passive.worker_suspect   probe, for a gateway worker failing nearly every proxy it used
#                                                                                {workerId, proxies, failing}
#   provider.request         reconcile and gc, for every provider call (seed §9's provider_requests_total)
#                                                                                {provider, op, result, latencyMs}
#   probe.result             probe, for every tier of every probe (seed §9's healthcheck_* vectors)
#                                                                                {proxy, tier, ok, latencyMs, code}
#                            tier BASIC, EGRESS or TARGET; TARGET lines add {route} (docs/health.md § TARGET)
#   gateway.route_failed_open  snapshot pass, each pass while a route's target check fails through every
#                            proxy the snapshots carry (so none is excluded from it)    {routes}
#   leases.store_unavailable  the API, for each discovery or lease request answered 503 because the lease
#                            store (Firestore) failed, contention outlasted the retries, or views not loaded
#                                                                                {op, reason}
#   leases.credentials_unreadable  the API, for each proxy it sets aside because it could not read the
#                            proxy's credentials (every proxy of a secret at once when the secret is)
#                                                                                {proxy, secret}
#   job.tick_failed          probe, gc, requeue and snapshot, for each Scheduler tick whose run failed
#                                                                                {job, error}
#   job.tick                 probe, gc, requeue and snapshot, for each Scheduler tick taken up, before its run
#                                                                                {job}
#   probe.pass_budget_spent  probe, for a pass that ran out of its run's budget (PROBE_RUN_BUDGET_SECONDS)
#                            with proxies still undecided                        {budgetMs, undecided}
#                            the line adds {decided, first}: the first ten undecided names
#   probe.credentials_unavailable  probe, for a pass that could not read some proxies' credentials
#                            (Secret Manager failing in passing): only their liveness judged
#                                                                                {proxies, judgedDead}
#   reconcile.drift_poll_failed  reconcile, for a drift poll whose pass failed (acknowledged, not retried)
#                                                                                {proxy, pass}
# Dead letters need no log line: Pub/Sub's own metric on the inspect subscription counts them.

locals {
  log_counters = {
    proxies_failed = {
      event       = "proxy.failed"
      description = "Proxies whose phase became Failed (permanent provider error; latched until the spec changes)."
      # The Provisioned condition's reason code (a short enum, so the label's cardinality stays bounded),
      # not `reason`: that is the reconcile request's reason, on every line of the delivery.
      labels = { reason = "jsonPayload.failureReason" }
    }
    # By the arm the proxy is in (out of leasing, its instance deleted, or serving an older version): three
    # values. The lines name the proxy and the unreadable secret for Logs Explorer.
    cloud_init_errors = {
      event       = "proxy.cloud_init_error"
      description = "Reconcile passes of managed proxies whose credentials secret cannot be read for their cloud-init, by arm."
      labels      = { branch = "jsonPayload.branch" }
    }
    quota_exceeded = {
      event       = "provider.quota_exceeded"
      description = "Instance creations refused for quota (retried at QuotaRetry)."
      labels      = { zone = "jsonPayload.zone" }
    }
    slow_boots = {
      event       = "proxy.boot_slow"
      description = "Reconcile passes of managed proxies whose instance has been booting over 20 minutes (GCE holding it PENDING, STAGING or REPAIRING), by zone."
      labels      = { zone = "jsonPayload.zone" }
    }
    gc_deletions = {
      event       = "gc.deleted"
      description = "Orphan instances deleted by the GC sweep."
      labels      = { zone = "jsonPayload.zone" }
    }
    # No label: `routes` is a list; the lines name them for Logs Explorer.
    routes_failed_open = {
      event       = "gateway.route_failed_open"
      description = "Snapshot passes that found a route whose target check fails through every proxy (none excluded from it)."
      labels      = {}
    }
    suspect_workers = {
      event       = "passive.worker_suspect"
      description = "Probe windows in which a gateway worker failed nearly every proxy it used (its outcomes were not counted)."
      labels      = { worker = "jsonPayload.workerId" }
    }
    # By operation (acquire, renew, release, report, list) and the store's reason (unavailable,
    # contended, not_ready): 15 series at most.
    lease_store_unavailable = {
      event       = "leases.store_unavailable"
      description = "Discovery and lease requests answered 503 because the lease store failed, by operation and reason."
      labels      = { op = "jsonPayload.op", reason = "jsonPayload.reason" }
    }
    # No label: the lines name the proxy and its secret for Logs Explorer.
    lease_credentials_unreadable = {
      event       = "leases.credentials_unreadable"
      description = "Proxies the lease service set aside because it could not read their credentials (Secret Manager)."
      labels      = {}
    }
    # No alert: probes by tier and result — seed §9's healthcheck_failures_total is ok="false". Not by proxy
    # nor by route: a label per proxy or per route would be a time series each (the lines carry `proxy` and,
    # for TARGET, `route` for Logs Explorer). TARGET failures are sites refusing proxies, not dead proxies:
    # the tier label keeps them apart from BASIC's.
    probe_results = {
      event       = "probe.result"
      description = "Health probes by tier (BASIC, EGRESS, TARGET) and result (ok true/false)."
      labels      = { tier = "jsonPayload.tier", ok = "jsonPayload.ok" }
    }
    # Failed Scheduler ticks by job (probe-tick, gc-sweep, requeue-sweep, snapshot-tick); the alert
    # failing_jobs fires only when one repeats (a failed tick is retried, or the next tick runs). Before
    # this line existed a probe or gc tick that threw left only the functions framework's text stack,
    # which no metric sees.
    tick_failures = {
      event       = "job.tick_failed"
      description = "Scheduler ticks whose run failed, by job (probe-tick, gc-sweep, requeue-sweep, snapshot-tick)."
      labels      = { job = "jsonPayload.job" }
    }
    # Scheduler ticks taken up, by job: the alert stopped_jobs fires when a job's ticks stop coming (paused,
    # disabled, not published, not delivered), which no failure line can show.
    ticks = {
      event       = "job.tick"
      description = "Scheduler ticks each function took up, by job (probe-tick, gc-sweep, requeue-sweep, snapshot-tick)."
      labels      = { job = "jsonPayload.job" }
    }
    # No label: the lines name the first ten undecided proxies for Logs Explorer.
    probe_budget_spent = {
      event       = "probe.pass_budget_spent"
      description = "Probe passes that ran out of their run's budget (PROBE_RUN_BUDGET_SECONDS) with proxies undecided."
      labels      = {}
    }
    probe_credentials_unavailable = {
      event       = "probe.credentials_unavailable"
      description = "Probe passes that could not read some proxies' credentials (Secret Manager) and judged only their liveness."
      labels      = {}
    }
    # No label: the lines name the proxy for Logs Explorer. A drift poll's failed pass is acknowledged, not
    # retried (its next slot polls again), so a lasting fault on the steady fleet dead-letters nothing.
    drift_polls_failed = {
      event       = "reconcile.drift_poll_failed"
      description = "Drift polls of steady proxies whose reconcile pass failed (acknowledged: the next DriftPoll slot polls again)."
      labels      = {}
    }
    # No alert: a chart of Compute Engine calls by operation and result (ok, quota, permanent, transient).
    provider_requests = {
      event       = "provider.request"
      description = "Provider (Compute Engine) calls by reconcile and gc, by provider, operation and result."
      labels      = { provider = "jsonPayload.provider", op = "jsonPayload.op", result = "jsonPayload.result" }
    }
  }

  # The gateway.traffic fields the gateway alerts divide, one distribution each, by worker: a worker's
  # line is one value of each. The alerts merge a worker's lines of the window into one distribution
  # (ALIGN_SUM) and read its mean (REDUCE_MEAN: the documented way from a distribution to a number a
  # threshold compares; no aligner or reducer gives its sum). Both means are over the same lines, so
  # mean(field) / mean(requests) is sum(field) / sum(requests): the share. `worker` is bounded by the live
  # workers (gateway_max_instances and the CONNECT VMs): a worker id that went away leaves a series that
  # stops, as worker_snapshot_age's do.
  gateway_traffic = {
    requests = {
      field       = "jsonPayload.requests"
      description = "Requests each gateway worker answered (or saw the client leave) per gateway.traffic line."
    }
    no_upstream = {
      field       = "jsonPayload.outcomes.noUpstream"
      description = "Requests each gateway worker answered 503 no_upstream per gateway.traffic line."
    }
    outcome_drops = {
      field       = "jsonPayload.outcomeQueueDrops"
      description = "Outcome samples each gateway worker dropped (its report queue full) per gateway.traffic line."
    }
    suspect_fallbacks = {
      field       = "jsonPayload.suspectFallbacks"
      description = "Requests each gateway worker sent to a SUSPECT proxy for want of a sound one, per gateway.traffic line."
    }
  }

  notification_channels = [for c in google_monitoring_notification_channel.email : c.id]
  runbook               = "See docs/operations.md in the proxyplane repository"
}

resource "google_monitoring_notification_channel" "email" {
  for_each = toset(var.alert_emails)

  display_name = "proxyplane alerts: ${each.value}"
  type         = "email"
  labels       = { email_address = each.value }

  depends_on = [google_project_service.enabled]
}

resource "google_logging_metric" "counter" {
  for_each = local.log_counters

  name        = "proxyplane/${each.key}"
  description = each.value.description
  filter      = "jsonPayload.event=\"${each.value.event}\""

  metric_descriptor {
    metric_kind = "DELTA"
    value_type  = "INT64"
    unit        = "1"

    dynamic "labels" {
      for_each = each.value.labels
      content {
        key        = labels.key
        value_type = "STRING"
      }
    }
  }

  label_extractors = { for key, field in each.value.labels : key => "EXTRACT(${field})" }

  depends_on = [google_project_service.enabled]
}

resource "google_logging_metric" "worker_snapshot_age" {
  name        = "proxyplane/worker_snapshot_age"
  description = "Age of each gateway worker's current snapshot, as the worker reports it."
  filter      = "jsonPayload.event=\"gateway.snapshot_age\""

  metric_descriptor {
    metric_kind = "DELTA"
    value_type  = "DISTRIBUTION"
    unit        = "s"

    labels {
      key        = "worker"
      value_type = "STRING"
    }
  }

  value_extractor  = "EXTRACT(jsonPayload.ageSeconds)"
  label_extractors = { worker = "EXTRACT(jsonPayload.workerId)" }

  # Explicit 15 s steps around the alert threshold: the alert reads a percentile, which Cloud Monitoring
  # interpolates inside a bucket, so one report of 64 s in a 64-128 s bucket would read ~127 s. With a
  # bucket bound at the threshold (variables.tf allows only such thresholds), it fires exactly when a
  # report is at or above the threshold.
  bucket_options {
    explicit_buckets {
      bounds = [15, 30, 45, 60, 75, 90, 105, 120, 135, 150, 180, 240, 300, 600, 1800, 3600]
    }
  }

  depends_on = [google_project_service.enabled]
}

resource "google_logging_metric" "gateway_traffic" {
  for_each = local.gateway_traffic

  name        = "proxyplane/gateway_${each.key}"
  description = each.value.description
  filter      = "jsonPayload.event=\"gateway.traffic\""

  metric_descriptor {
    metric_kind = "DELTA"
    value_type  = "DISTRIBUTION"
    unit        = "1"

    labels {
      key        = "worker"
      value_type = "STRING"
    }
  }

  value_extractor  = "EXTRACT(${each.value.field})"
  label_extractors = { worker = "EXTRACT(jsonPayload.workerId)" }

  # The alerts read the mean, which a distribution keeps exactly (count, mean, sum of squared deviations);
  # the buckets only shape the charts' heatmaps: counts per 30 s line, 0, then 1, 4, 16, … to ~a billion.
  bucket_options {
    exponential_buckets {
      num_finite_buckets = 16
      growth_factor      = 4
      scale              = 1
    }
  }

  depends_on = [google_project_service.enabled]
}

# Seed §9's healthcheck_duration_seconds: every probe's latency, by tier, from the probe.result lines.
resource "google_logging_metric" "probe_latency" {
  name        = "proxyplane/probe_latency"
  description = "Latency of each health probe through a proxy, by tier (milliseconds)."
  filter      = "jsonPayload.event=\"probe.result\""

  metric_descriptor {
    metric_kind = "DELTA"
    value_type  = "DISTRIBUTION"
    unit        = "ms"

    labels {
      key        = "tier"
      value_type = "STRING"
    }
  }

  value_extractor  = "EXTRACT(jsonPayload.latencyMs)"
  label_extractors = { tier = "EXTRACT(jsonPayload.tier)" }

  bucket_options {
    explicit_buckets {
      bounds = [10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000]
    }
  }

  depends_on = [google_project_service.enabled]
}

resource "google_monitoring_alert_policy" "proxies_failed" {
  display_name          = "proxyplane: proxies Failed"
  combiner              = "OR"
  notification_channels = local.notification_channels

  conditions {
    display_name = "a proxy became Failed in the last 10 minutes"
    condition_threshold {
      filter          = "metric.type=\"logging.googleapis.com/user/${google_logging_metric.counter["proxies_failed"].name}\""
      comparison      = "COMPARISON_GT"
      threshold_value = 0
      duration        = "0s"
      aggregations {
        alignment_period     = "600s"
        per_series_aligner   = "ALIGN_SUM"
        cross_series_reducer = "REDUCE_SUM"
        group_by_fields      = ["metric.label.reason"]
      }
    }
  }

  documentation {
    content   = "A proxy hit a permanent provider error and is latched Failed until its spec changes. ${local.runbook}, \"Failed proxies\"."
    mime_type = "text/markdown"
  }
}

resource "google_monitoring_alert_policy" "cloud_init_errors" {
  display_name          = "proxyplane: proxies without readable credentials"
  combiner              = "OR"
  notification_channels = local.notification_channels

  # Lines for half an hour: the passes back off to CloudInitRetryMax (10 min), so a proxy stuck on its
  # secret logs in every 20-minute window; a window's sum stays above 0 for 20 minutes after the last line,
  # so the condition holds 50 minutes (duration) only once the lines have gone on for 30 — a version added
  # while a proxy is created (a few passes in its first minute) does not page.
  conditions {
    display_name = "a proxy's credentials unreadable for 30 minutes"
    condition_threshold {
      filter          = "metric.type=\"logging.googleapis.com/user/${google_logging_metric.counter["cloud_init_errors"].name}\""
      comparison      = "COMPARISON_GT"
      threshold_value = 0
      duration        = "3000s"
      aggregations {
        alignment_period     = "1200s"
        per_series_aligner   = "ALIGN_SUM"
        cross_series_reducer = "REDUCE_SUM"
        group_by_fields      = ["metric.label.branch"]
      }
    }
  }

  documentation {
    content   = "Managed proxies cannot build their cloud-init: their credentials secret or version is missing, disabled, destroyed or not granted. They stay out of leasing (or serve an older version) until it is readable. ${local.runbook}, \"Proxies without readable credentials\"."
    mime_type = "text/markdown"
  }
}

resource "google_monitoring_alert_policy" "slow_boots" {
  display_name          = "proxyplane: instances that do not finish booting"
  combiner              = "OR"
  notification_channels = local.notification_channels

  # Each pass of such a proxy logs a line (polled every minute by then): any line in the last 10 minutes is
  # an instance already 20 minutes into a boot that takes one or two.
  conditions {
    display_name = "an instance booting past 20 minutes, in the last 10 minutes"
    condition_threshold {
      filter          = "metric.type=\"logging.googleapis.com/user/${google_logging_metric.counter["slow_boots"].name}\""
      comparison      = "COMPARISON_GT"
      threshold_value = 0
      duration        = "0s"
      aggregations {
        alignment_period     = "600s"
        per_series_aligner   = "ALIGN_SUM"
        cross_series_reducer = "REDUCE_SUM"
        group_by_fields      = ["metric.label.zone"]
      }
    }
  }

  documentation {
    content   = "Managed proxies whose instance has been booting for over 20 minutes: GCE is holding it (capacity in the zone, or a repair); the proxy serves nothing meanwhile. ${local.runbook}, \"Instances that do not finish booting\"."
    mime_type = "text/markdown"
  }
}

resource "google_monitoring_alert_policy" "quota_exceeded" {
  display_name          = "proxyplane: quota exceeded"
  combiner              = "OR"
  notification_channels = local.notification_channels

  conditions {
    display_name = "instance creation refused for quota in the last 10 minutes"
    condition_threshold {
      filter          = "metric.type=\"logging.googleapis.com/user/${google_logging_metric.counter["quota_exceeded"].name}\""
      comparison      = "COMPARISON_GT"
      threshold_value = 0
      duration        = "0s"
      aggregations {
        alignment_period     = "600s"
        per_series_aligner   = "ALIGN_SUM"
        cross_series_reducer = "REDUCE_SUM"
        group_by_fields      = ["metric.label.zone"]
      }
    }
  }

  documentation {
    content   = "Compute Engine refused instances for quota; reconcile retries at QuotaRetry. ${local.runbook}, \"Quota\"."
    mime_type = "text/markdown"
  }
}

resource "google_monitoring_alert_policy" "suspect_workers" {
  display_name          = "proxyplane: a gateway worker fails nearly every proxy"
  combiner              = "OR"
  notification_channels = local.notification_channels

  conditions {
    display_name = "a worker judged suspect by the probe in the last 10 minutes"
    condition_threshold {
      filter          = "metric.type=\"logging.googleapis.com/user/${google_logging_metric.counter["suspect_workers"].name}\""
      comparison      = "COMPARISON_GT"
      threshold_value = 0
      duration        = "0s"
      aggregations {
        alignment_period     = "600s"
        per_series_aligner   = "ALIGN_SUM"
        cross_series_reducer = "REDUCE_SUM"
        group_by_fields      = ["metric.label.worker"]
      }
    }
  }

  documentation {
    content   = "A gateway worker failed nearly every proxy it used: its own egress or credentials are the likely fault, so its outcomes were not held against the proxies. ${local.runbook}, \"A suspect gateway worker\"."
    mime_type = "text/markdown"
  }
}

resource "google_monitoring_alert_policy" "routes_failed_open" {
  display_name          = "proxyplane: a gateway route's target check fails through every proxy"
  combiner              = "OR"
  notification_channels = local.notification_channels

  conditions {
    # The pass logs it on every run (at least once a minute) while it lasts: more than 5 in 10 minutes is
    # a site or a check that has stayed broken, not one pass between two probes.
    display_name = "a route failing open through most of the last 10 minutes"
    condition_threshold {
      filter          = "metric.type=\"logging.googleapis.com/user/${google_logging_metric.counter["routes_failed_open"].name}\""
      comparison      = "COMPARISON_GT"
      threshold_value = 5
      duration        = "0s"
      aggregations {
        alignment_period     = "600s"
        per_series_aligner   = "ALIGN_SUM"
        cross_series_reducer = "REDUCE_SUM"
      }
    }
  }

  documentation {
    content   = "A route's target check fails through every proxy the gateways carry, so the route uses them all (fail open): the target site is down or refuses the whole fleet, or the check's URL is wrong. ${local.runbook}, \"A route failing open\"."
    mime_type = "text/markdown"
  }
}

# A probe that keeps running out of time, or keeps failing to read credentials, is a probe whose verdicts
# stop moving (or move on liveness alone) while nothing else looks wrong. One pass of either is a blip a
# later pass repairs; what pages is one that keeps happening. A line's count says little (a run has a pass
# per due slot; up to two of them can overrun), its persistence does: the trailing 5-minute sum is above 0
# from a line until 5 minutes after the last, and held for 10 minutes it pages once lines have kept coming
# with no gap over 5 minutes for 5 minutes — 10 minutes after the first. Not grouped: the lines name the
# proxies.
resource "google_monitoring_alert_policy" "probe_out_of_time" {
  display_name          = "proxyplane: probe passes run out of time"
  combiner              = "OR"
  notification_channels = local.notification_channels

  conditions {
    display_name = "probe passes out of their budget, no gap over 5 minutes, for 10 minutes"
    condition_threshold {
      filter          = "metric.type=\"logging.googleapis.com/user/${google_logging_metric.counter["probe_budget_spent"].name}\""
      comparison      = "COMPARISON_GT"
      threshold_value = 0
      duration        = "600s"
      aggregations {
        alignment_period     = "300s"
        per_series_aligner   = "ALIGN_SUM"
        cross_series_reducer = "REDUCE_SUM"
      }
    }
  }

  documentation {
    content   = "Probe passes keep running out of their run's budget (PROBE_RUN_BUDGET_SECONDS) with proxies undecided: the health of those proxies is not moving. ${local.runbook}, \"A probe out of time\"."
    mime_type = "text/markdown"
  }
}

# A drift poll whose pass fails is acknowledged (its next slot polls again) instead of retried into a dead
# letter: a Compute blip costs nothing, and an outage piles no retry chains up. What pages is one that lasts:
# the steady fleet's passes failing with no gap over 5 minutes for 25 minutes, 30 after the first (a grant removed: 403 on
# instances.get, which the adapter classes transient; VPC Service Controls; a bug), which dead-lettered
# before and now shows only here.
resource "google_monitoring_alert_policy" "drift_polls_failed" {
  display_name          = "proxyplane: drift polls keep failing"
  combiner              = "OR"
  notification_channels = local.notification_channels

  conditions {
    display_name = "drift polls failing, no gap over 5 minutes, for 30 minutes from the first"
    condition_threshold {
      filter          = "metric.type=\"logging.googleapis.com/user/${google_logging_metric.counter["drift_polls_failed"].name}\""
      comparison      = "COMPARISON_GT"
      threshold_value = 0
      duration        = "1800s"
      aggregations {
        alignment_period     = "300s"
        per_series_aligner   = "ALIGN_SUM"
        cross_series_reducer = "REDUCE_SUM"
      }
    }
  }

  documentation {
    content   = "Reconcile's drift polls of the steady fleet keep failing: a VM that died is not noticed by its drift poll (the probe still takes it out of leasing). ${local.runbook}, \"Drift polls failing\"."
    mime_type = "text/markdown"
  }
}

resource "google_monitoring_alert_policy" "probe_credentials_unavailable" {
  display_name          = "proxyplane: the probe cannot read proxy credentials"
  combiner              = "OR"
  notification_channels = local.notification_channels

  conditions {
    # The probe's cache serves a secret's last copy for 5 minutes into an outage: the first line is
    # already 5 minutes in.
    display_name = "probe passes without some proxies' credentials, no gap over 5 minutes, for 10 minutes"
    condition_threshold {
      filter          = "metric.type=\"logging.googleapis.com/user/${google_logging_metric.counter["probe_credentials_unavailable"].name}\""
      comparison      = "COMPARISON_GT"
      threshold_value = 0
      duration        = "600s"
      aggregations {
        alignment_period     = "300s"
        per_series_aligner   = "ALIGN_SUM"
        cross_series_reducer = "REDUCE_SUM"
      }
    }
  }

  documentation {
    content   = "The probe keeps failing to read some proxies' credentials from Secret Manager, so it judges only whether they answer: a proxy that rejects its credentials stays Ready. ${local.runbook}, \"The probe without credentials\"."
    mime_type = "text/markdown"
  }
}

resource "google_monitoring_alert_policy" "lease_store_unavailable" {
  display_name          = "proxyplane: lease store unavailable"
  combiner              = "OR"
  notification_channels = local.notification_channels

  conditions {
    # Every 503 is retried by its crawler after Retry-After (1-2 s), so a burst is harmless: a replica
    # that starts (not_ready until its views load), a contention spike on a few proxies. What pages is a
    # store that keeps failing: more than 10 answers in the trailing 5 minutes, and still so 5 minutes
    # later. A burst stays in the trailing sum for under 5 minutes, so it does not fire however large;
    # one crawler retrying every 2 s passes 10 in its first minute of an outage, so an outage pages about
    # 6 minutes in (plus log ingestion). Not grouped: an outage shows under several operations and
    # reasons at once, and they are one incident.
    display_name = "lease requests answered 503 for 5 minutes"
    condition_threshold {
      filter          = "metric.type=\"logging.googleapis.com/user/${google_logging_metric.counter["lease_store_unavailable"].name}\""
      comparison      = "COMPARISON_GT"
      threshold_value = 10
      duration        = "300s"
      aggregations {
        alignment_period     = "300s"
        per_series_aligner   = "ALIGN_SUM"
        cross_series_reducer = "REDUCE_SUM"
      }
    }
  }

  documentation {
    content   = "Discovery and lease requests keep getting 503 unavailable: the lease store (Firestore) is failing, contention outlasts the retries, or replicas cannot load their views. Crawlers retry, but cannot lease meanwhile. ${local.runbook}, \"Lease store unavailable\"."
    mime_type = "text/markdown"
  }
}

# The API answering at all. Every other alert reads lines the plane logs: an API that crash-loops or is
# unreachable logs nothing, so "lease store unavailable" (its own lines) cannot fire, and the only page
# was the stale gateway's a minute later — whose runbook points at the snapshot function, which is
# healthy: it only has no live session to build for (a gateway's session lapses 30 s after the API stops
# answering its reports, and every gateway stops within about three minutes). Google's uptime checkers
# call /v1/echo, which needs no credential, from several regions every minute — not /healthz: Cloud Run's
# front end reserves paths ending in "z" on run.app and answers them with a 404 of its own. The echo's
# successful requests are kept out of the logs (the exclusion below; the API logs them at DEBUG).
resource "google_monitoring_uptime_check_config" "api" {
  display_name = "proxyplane: API /v1/echo"
  timeout      = "10s"
  period       = "60s"

  http_check {
    path         = "/v1/echo"
    port         = 443
    use_ssl      = true
    validate_ssl = true
  }

  monitored_resource {
    type = "uptime_url"
    labels = {
      project_id = var.project_id
      host       = trimprefix(local.api_url, "https://")
    }
  }

  depends_on = [google_project_service.enabled]
}

resource "google_monitoring_alert_policy" "api_not_answering" {
  display_name          = "proxyplane: the API is not answering"
  combiner              = "OR"
  notification_channels = local.notification_channels

  conditions {
    # More than one checker region failing (one alone is that region's network), through 2 minutes: a
    # revision rolling out answers throughout; an API down pages 3-4 minutes in (a check a minute, log-free
    # ingestion, the 2 minutes), about when its gateways stop.
    display_name = "/v1/echo failed from more than one checker region through 2 minutes"
    condition_threshold {
      filter          = "metric.type=\"monitoring.googleapis.com/uptime_check/check_passed\" AND metric.label.check_id=\"${google_monitoring_uptime_check_config.api.uptime_check_id}\" AND resource.type=\"uptime_url\""
      comparison      = "COMPARISON_GT"
      threshold_value = 1
      duration        = "120s"
      aggregations {
        alignment_period     = "60s"
        per_series_aligner   = "ALIGN_NEXT_OLDER"
        cross_series_reducer = "REDUCE_COUNT_FALSE"
        group_by_fields      = ["resource.label.host"]
      }
    }
  }

  documentation {
    content   = "Google's uptime checkers get no answer from the API's /v1/echo: crawlers cannot lease, and every gateway worker stops serving within about three minutes of its last report. ${local.runbook}, \"The API not answering\"."
    mime_type = "text/markdown"
  }
}

resource "google_monitoring_alert_policy" "lease_credentials_unreadable" {
  display_name          = "proxyplane: the API cannot read proxy credentials"
  combiner              = "OR"
  notification_channels = local.notification_channels

  # A proxy set aside sits out 30 s, and each acquire that meets it again sets it aside again: while
  # crawlers ask, a secret the API cannot read logs in every 10-minute window. A window's sum stays above 0
  # for 10 minutes after the last line, so the condition holds 30 minutes (duration) only once the lines
  # have gone on for 20: not a version being added in passing.
  conditions {
    display_name = "proxies set aside for unreadable credentials for 20 minutes"
    condition_threshold {
      filter          = "metric.type=\"logging.googleapis.com/user/${google_logging_metric.counter["lease_credentials_unreadable"].name}\""
      comparison      = "COMPARISON_GT"
      threshold_value = 0
      duration        = "1800s"
      aggregations {
        alignment_period     = "600s"
        per_series_aligner   = "ALIGN_SUM"
        cross_series_reducer = "REDUCE_SUM"
      }
    }
  }

  documentation {
    content   = "The lease service cannot read some proxies' credentials in Secret Manager and sets them aside: crawlers are refused (409 no_match, counted unhealthy) while those proxies sit idle. ${local.runbook}, \"The API cannot read proxy credentials\"."
    mime_type = "text/markdown"
  }
}

resource "google_monitoring_alert_policy" "gc_deletions" {
  display_name          = "proxyplane: orphan GC deleting instances"
  combiner              = "OR"
  notification_channels = local.notification_channels

  conditions {
    display_name = "more than ${var.gc_deletions_alert_threshold} orphan deletions in an hour"
    condition_threshold {
      filter          = "metric.type=\"logging.googleapis.com/user/${google_logging_metric.counter["gc_deletions"].name}\""
      comparison      = "COMPARISON_GT"
      threshold_value = var.gc_deletions_alert_threshold
      duration        = "0s"
      aggregations {
        alignment_period     = "3600s"
        per_series_aligner   = "ALIGN_SUM"
        cross_series_reducer = "REDUCE_SUM"
      }
    }
  }

  documentation {
    content   = "The GC only closes crash gaps between an instance insert and its status write; many deletions mean something creates stray labelled VMs. ${local.runbook}, \"GC deletions\"."
    mime_type = "text/markdown"
  }
}

resource "google_monitoring_alert_policy" "failing_jobs" {
  display_name          = "proxyplane: a scheduled job keeps failing"
  combiner              = "OR"
  notification_channels = local.notification_channels

  # The jobs that tick every minute (probe, requeue, snapshot): more than the threshold in 15 minutes.
  conditions {
    display_name = "more than ${var.tick_failures_alert_threshold} failed runs of one job in 15 minutes"
    condition_threshold {
      filter          = "metric.type=\"logging.googleapis.com/user/${google_logging_metric.counter["tick_failures"].name}\" AND metric.label.job != \"gc-sweep\""
      comparison      = "COMPARISON_GT"
      threshold_value = var.tick_failures_alert_threshold
      duration        = "0s"
      aggregations {
        alignment_period     = "900s"
        per_series_aligner   = "ALIGN_SUM"
        cross_series_reducer = "REDUCE_SUM"
        group_by_fields      = ["metric.label.job"]
      }
    }
  }
  # gc-sweep ticks every 10 minutes: 15 minutes hold at most two of its runs, which never exceed the
  # threshold; an hour holds six (with the default, it fires on the fourth failed run).
  conditions {
    display_name = "more than ${var.tick_failures_alert_threshold} failed gc-sweep runs in an hour"
    condition_threshold {
      filter          = "metric.type=\"logging.googleapis.com/user/${google_logging_metric.counter["tick_failures"].name}\" AND metric.label.job = \"gc-sweep\""
      comparison      = "COMPARISON_GT"
      threshold_value = var.tick_failures_alert_threshold
      duration        = "0s"
      aggregations {
        alignment_period     = "3600s"
        per_series_aligner   = "ALIGN_SUM"
        cross_series_reducer = "REDUCE_SUM"
        group_by_fields      = ["metric.label.job"]
      }
    }
  }

  documentation {
    content   = "A Scheduler job (probe-tick, gc-sweep, requeue-sweep, snapshot-tick) fails run after run: health verdicts, orphan deletions, requeues or gateway snapshots have stopped. ${local.runbook}, \"A failing scheduled job\"."
    mime_type = "text/markdown"
  }
}

resource "google_monitoring_alert_policy" "stopped_jobs" {
  display_name          = "proxyplane: a scheduled job stopped running"
  combiner              = "OR"
  notification_channels = local.notification_channels

  # A job paused (POST /v1/jobs/NAME:pause) and forgotten, disabled, or whose ticks no longer reach its
  # function: no run, so no failure line either. Per job: a job that ticked and went quiet is absent.
  # The jobs that tick every minute: 30 missed ticks.
  conditions {
    display_name = "no tick of a minute job taken up for 30 minutes"
    condition_absent {
      filter = "metric.type=\"logging.googleapis.com/user/${google_logging_metric.counter["ticks"].name}\" AND metric.label.job != \"gc-sweep\""
      # The last aligned point covers the 5 minutes before it: absent 25 minutes after it, 30 after the tick.
      duration = "1500s"
      aggregations {
        alignment_period     = "300s"
        per_series_aligner   = "ALIGN_SUM"
        cross_series_reducer = "REDUCE_SUM"
        group_by_fields      = ["metric.label.job"]
      }
    }
  }
  # gc-sweep ticks every 10 minutes: four missed ticks.
  conditions {
    display_name = "no gc-sweep tick taken up for 45 minutes"
    condition_absent {
      filter = "metric.type=\"logging.googleapis.com/user/${google_logging_metric.counter["ticks"].name}\" AND metric.label.job = \"gc-sweep\""
      # As above: absent 30 minutes after the last 15-minute point, 45 after the tick.
      duration = "1800s"
      aggregations {
        alignment_period     = "900s"
        per_series_aligner   = "ALIGN_SUM"
        cross_series_reducer = "REDUCE_SUM"
        group_by_fields      = ["metric.label.job"]
      }
    }
  }

  documentation {
    content   = "A Scheduler job (probe-tick, gc-sweep, requeue-sweep, snapshot-tick) has not ticked for several of its periods: health verdicts, orphan deletions, requeues or gateway snapshots have stopped without a failure to show it. ${local.runbook}, \"A stopped scheduled job\"."
    mime_type = "text/markdown"
  }
}

resource "google_monitoring_alert_policy" "dead_letters" {
  display_name          = "proxyplane: dead-lettered messages"
  combiner              = "OR"
  notification_channels = local.notification_channels

  conditions {
    display_name = "messages waiting on ${google_pubsub_subscription.dead_letters_inspect.name}"
    condition_threshold {
      filter          = "metric.type=\"pubsub.googleapis.com/subscription/num_undelivered_messages\" AND resource.type=\"pubsub_subscription\" AND resource.label.subscription_id=\"${google_pubsub_subscription.dead_letters_inspect.name}\""
      comparison      = "COMPARISON_GT"
      threshold_value = 0
      duration        = "300s"
      aggregations {
        alignment_period   = "60s"
        per_series_aligner = "ALIGN_MAX"
      }
    }
  }

  documentation {
    content   = "A push subscription gave up on a message after its maxDeliveryAttempts. ${local.runbook}, \"Dead letters\"."
    mime_type = "text/markdown"
  }
}

resource "google_monitoring_alert_policy" "stale_gateway" {
  display_name          = "proxyplane: stale gateway snapshot"
  combiner              = "OR"
  notification_channels = local.notification_channels

  conditions {
    display_name = "a worker's snapshot is older than ${var.max_snapshot_age_seconds} s"
    condition_threshold {
      filter          = "metric.type=\"logging.googleapis.com/user/${google_logging_metric.worker_snapshot_age.name}\""
      comparison      = "COMPARISON_GT"
      threshold_value = var.max_snapshot_age_seconds
      # At once: the worker stops taking traffic at WORKER_MAX_STALE_AGE_SECONDS (150 s), and an age over
      # the threshold reaches this condition up to one 30 s report later plus log ingestion; waiting
      # longer would page after the gateway already refuses traffic (variables.tf bounds the threshold).
      duration = "0s"
      aggregations {
        alignment_period     = "60s"
        per_series_aligner   = "ALIGN_PERCENTILE_99"
        cross_series_reducer = "REDUCE_MAX"
        group_by_fields      = ["metric.label.worker"]
      }
    }
  }

  # No report at all is as bad as an old one: a gateway that stopped logging is not serving either.
  conditions {
    display_name = "no gateway worker reported its snapshot age for 10 minutes"
    condition_absent {
      filter = "metric.type=\"logging.googleapis.com/user/${google_logging_metric.worker_snapshot_age.name}\""
      # The last aligned point covers the 5 minutes before it: absent 5 minutes after it, 10 after the line.
      duration = "300s"
      # Merged into one series across workers: only "no worker at all" is absent; a worker that
      # went away in a scale-down is not.
      aggregations {
        alignment_period     = "300s"
        per_series_aligner   = "ALIGN_PERCENTILE_50"
        cross_series_reducer = "REDUCE_MAX"
      }
    }
  }

  # The CONNECT gateway VMs (gateway_connect.tf) log as Compute Engine instances. The Cloud Run gateway's
  # lines keep the merged series above present while every VM is down — a startup script failing on each
  # boot, which autohealing recreates for ever — so the VMs' own lines have a condition of their own.
  dynamic "conditions" {
    for_each = local.gateway_connect_enabled ? ["gce_instance"] : []
    content {
      display_name = "no CONNECT gateway VM reported its snapshot age for 10 minutes"
      condition_absent {
        filter   = "metric.type=\"logging.googleapis.com/user/${google_logging_metric.worker_snapshot_age.name}\" AND resource.type=\"${conditions.value}\""
        duration = "300s" # as above: 10 minutes after the last line
        aggregations {
          alignment_period     = "300s"
          per_series_aligner   = "ALIGN_PERCENTILE_50"
          cross_series_reducer = "REDUCE_MAX"
        }
      }
    }
  }

  documentation {
    content   = "A gateway worker is serving from an old snapshot (it stops taking traffic at maxStaleAge). ${local.runbook}, \"A stale gateway\"."
    mime_type = "text/markdown"
  }
}

# The three gateway traffic alerts: a share of each worker's requests, over trailing 5-minute windows of its
# gateway.traffic lines, above a threshold (variables.tf) through every window of the condition's duration.
# The duration is longer than the window, so one burst — or one unlucky request of an otherwise idle
# worker, which makes its window's share 100 % — leaves the window before the condition has held long
# enough: what pages is a share that stays high while the worker keeps serving. A window without a
# request has no share (0/0) and does not count either way. By worker: each finding is about one worker.
resource "google_monitoring_alert_policy" "gateway_no_upstream" {
  display_name          = "proxyplane: a gateway worker answers no_upstream"
  combiner              = "OR"
  notification_channels = local.notification_channels

  conditions {
    display_name = "more than ${var.gateway_no_upstream_alert_percent} % of a worker's requests answered no_upstream for 10 minutes"
    condition_threshold {
      filter             = "metric.type=\"logging.googleapis.com/user/${google_logging_metric.gateway_traffic["no_upstream"].name}\""
      denominator_filter = "metric.type=\"logging.googleapis.com/user/${google_logging_metric.gateway_traffic["requests"].name}\""
      comparison         = "COMPARISON_GT"
      threshold_value    = var.gateway_no_upstream_alert_percent / 100
      duration           = "600s"
      aggregations {
        alignment_period     = "300s"
        per_series_aligner   = "ALIGN_SUM"
        cross_series_reducer = "REDUCE_MEAN"
        group_by_fields      = ["metric.label.worker"]
      }
      denominator_aggregations {
        alignment_period     = "300s"
        per_series_aligner   = "ALIGN_SUM"
        cross_series_reducer = "REDUCE_MEAN"
        group_by_fields      = ["metric.label.worker"]
      }
    }
  }

  documentation {
    content   = "A gateway worker answers a large share of its requests 503 no_upstream: a route has no usable proxy on that worker (fewer proxies than workers, or every one at capacity). ${local.runbook}, \"A gateway answering no_upstream\"."
    mime_type = "text/markdown"
  }
}

resource "google_monitoring_alert_policy" "gateway_outcome_drops" {
  display_name          = "proxyplane: a gateway worker drops its outcome reports"
  combiner              = "OR"
  notification_channels = local.notification_channels

  conditions {
    display_name = "a worker dropped more than ${var.gateway_outcome_drop_alert_percent} % of its requests' outcomes for 10 minutes"
    condition_threshold {
      filter             = "metric.type=\"logging.googleapis.com/user/${google_logging_metric.gateway_traffic["outcome_drops"].name}\""
      denominator_filter = "metric.type=\"logging.googleapis.com/user/${google_logging_metric.gateway_traffic["requests"].name}\""
      comparison         = "COMPARISON_GT"
      threshold_value    = var.gateway_outcome_drop_alert_percent / 100
      duration           = "600s"
      aggregations {
        alignment_period     = "300s"
        per_series_aligner   = "ALIGN_SUM"
        cross_series_reducer = "REDUCE_MEAN"
        group_by_fields      = ["metric.label.worker"]
      }
      denominator_aggregations {
        alignment_period     = "300s"
        per_series_aligner   = "ALIGN_SUM"
        cross_series_reducer = "REDUCE_MEAN"
        group_by_fields      = ["metric.label.worker"]
      }
    }
  }

  documentation {
    content   = "A gateway worker's outcome queue keeps overflowing: its reports to the control plane are being lost, and passive health judges its proxies on part of the evidence. ${local.runbook}, \"A gateway dropping outcome reports\"."
    mime_type = "text/markdown"
  }
}

resource "google_monitoring_alert_policy" "gateway_suspect_fallbacks" {
  display_name          = "proxyplane: a gateway worker routes through SUSPECT proxies"
  combiner              = "OR"
  notification_channels = local.notification_channels

  conditions {
    # 15 minutes: a proxy stays SUSPECT until the probe's next verdicts clear it or make it UNHEALTHY
    # (and replaced), which a short spell of fallbacks is waiting for.
    display_name = "more than ${var.gateway_suspect_fallback_alert_percent} % of a worker's requests fell back to a SUSPECT proxy for 15 minutes"
    condition_threshold {
      filter             = "metric.type=\"logging.googleapis.com/user/${google_logging_metric.gateway_traffic["suspect_fallbacks"].name}\""
      denominator_filter = "metric.type=\"logging.googleapis.com/user/${google_logging_metric.gateway_traffic["requests"].name}\""
      comparison         = "COMPARISON_GT"
      threshold_value    = var.gateway_suspect_fallback_alert_percent / 100
      duration           = "900s"
      aggregations {
        alignment_period     = "300s"
        per_series_aligner   = "ALIGN_SUM"
        cross_series_reducer = "REDUCE_MEAN"
        group_by_fields      = ["metric.label.worker"]
      }
      denominator_aggregations {
        alignment_period     = "300s"
        per_series_aligner   = "ALIGN_SUM"
        cross_series_reducer = "REDUCE_MEAN"
        group_by_fields      = ["metric.label.worker"]
      }
    }
  }

  documentation {
    content   = "A gateway worker keeps sending requests to SUSPECT proxies because none of the route's sound ones is usable: routes run short of sound proxies. ${local.runbook}, \"A gateway falling back to SUSPECT proxies\"."
    mime_type = "text/markdown"
  }
}

# Cloud Run writes a request log entry of its own for every request. The EGRESS probe fetches the API's
# /v1/echo through each proxy twice a minute (2N a minute: 86 M entries a month at 1,000 proxies, ≈ 80 GiB
# as billed: docs/cost.md § Logging), and the uptime check on the API calls it every minute from each of its
# checker locations. Its successes
# are kept out of the _Default sink; the probe logs every EGRESS result itself (probe.result), a failed
# echo (4xx/5xx) is still logged, and nothing else of the API's traffic is excluded: the URL is matched
# whole (Cloud Run logs the full URL), not with `:`, Cloud Logging's substring match, which also hid any
# successful request whose URL merely contains "/v1/echo" (`/fleet?x=/v1/echo`: the fleet page, /metrics
# and /healthz read any query).
resource "google_logging_project_exclusion" "echo_requests" {
  name        = "proxyplane-echo-requests"
  description = "Successful Cloud Run request logs of the API's /v1/echo (the EGRESS probe); probe.result lines carry each result."
  filter      = "resource.type=\"cloud_run_revision\" AND resource.labels.service_name=\"${google_cloud_run_v2_service.api.name}\" AND log_id(\"run.googleapis.com/requests\") AND httpRequest.requestUrl=~\"^https?://[^/?#]+/v1/echo$\" AND httpRequest.status<400"

  depends_on = [google_project_service.enabled]
}
