# One Cloud Functions (gen2, nodejs22) function per row of shared/topology/functions.json.
#
# Sources: `node --import tsx terraform/build/build-sources.ts` compiles each function folder (and the
# shared/ code it imports) into dist/functions/<name>/ with a package.json listing exactly the npm
# packages it imports; Terraform zips that folder, uploads it under a content-addressed name (a new
# build = a new object = a new revision) and Cloud Build runs `npm ci` on it: each folder carries a
# package-lock.json cut from the repo's (terraform/build/lockfile.ts), so every transitive package is
# the version the tests ran against.
#
# Trigger: with function_trigger = "pubsub-push" (default) the function is reached by the push
# subscription pubsub.tf makes from the same table, so the table's backoff and dead-letter policy apply
# and dead letters reach the dead-letters topic. Eventarc cannot do that: it creates and owns its own
# subscription (eventarc-<region>-…), with a fixed 10-600 s backoff and no dead-letter topic that
# Terraform can set. With function_trigger = "eventarc" the function gets a gen2 event_trigger instead,
# retry_policy from the table's retry flag. Either way the code is the same: functions-framework turns
# both deliveries into the same CloudEvent.

locals {
  function_dist_dir = "${path.module}/../dist/functions"

  # Functions that open connections to the proxy VMs: their egress must leave through the static NAT
  # addresses that the proxy firewall admits (network.tf).
  proxy_egress_functions = toset(["probe"])

  # gc deletes instances: one sweep at a time (the seed's leader-elected sweeper; here a single instance).
  function_max_instances = { gc = 1 }

  runtime_env = {
    GOOGLE_CLOUD_PROJECT = var.project_id
    REGION               = var.region
    LOG_LEVEL            = var.log_level
  }

  # DriftPoll: how often a steady managed proxy's instance is re-read to catch out-of-band changes
  # (stopped, deleted, preempted). Health failures reconcile at once (the probe publishes), so this is a
  # backstop; docs/cost.md prices the fleet at 5 minutes.
  drift_poll_ms = tostring(var.drift_poll_seconds * 1000)

  function_env = {
    # The EGRESS tier checks what the echo sees against the prober's own NAT addresses: the API's /v1/echo,
    # https, so the exit address only — or an operator's plain-http echo (probe_echo_url), through which
    # forwarding-header leaks show too (docs/health.md). BASIC's handshake stays on the API's 443, which
    # every managed VM lets CONNECT reach (an http echo's port 80 is refused there).
    probe = {
      PROBE_ECHO_URL      = var.probe_echo_url != null ? var.probe_echo_url : join("", [local.api_url, "/v1/echo"])
      PROBE_HANDSHAKE_URL = local.api_url
      PROBE_CALLER_IPS    = join(",", google_compute_address.nat[*].address)
      PROBE_LOOP_SECONDS  = tostring(var.probe_loop_seconds)
    }
    # The names functions/reconcile/src/config.ts reads (it refuses to start on GCP without them): proxy
    # VMs land in the plane's network (auto mode: GCE picks the zone's regional subnet, so no
    # GCE_SUBNETWORK) with the account that may read their credentials. The network tag and the proxy
    # port are not configuration: reconcile tags every VM with NETWORK_TAG (shared/src/adapters/gce/
    # labels.ts, = local.proxy_network_tag) and the port is each proxy's spec.port (default 3128 =
    # var.proxy_port's default); the structural tests pin both.
    reconcile = {
      GCE_NETWORK             = google_compute_network.plane.self_link
      GCE_SERVICE_ACCOUNT     = google_service_account.proxy_vm.email
      RECONCILE_DRIFT_POLL_MS = local.drift_poll_ms
      # Stale-hash replacements at once, fleet-wide (docs/gc-and-rotation.md § Rolling replacement).
      RECONCILE_MAX_REPLACING = tostring(var.reconcile_max_replacing)
    }
    # The requeue sweep drift-polls the steady fleet every DriftPoll (it reads only reconcile's poll intervals).
    requeue = {
      RECONCILE_DRIFT_POLL_MS = local.drift_poll_ms
    }
  }
}

resource "google_storage_bucket" "sources" {
  name                        = "${var.project_id}-proxyplane-sources"
  location                    = var.region
  uniform_bucket_level_access = true
  public_access_prevention    = "enforced"
  force_destroy               = true # only build inputs live here; `terraform destroy` may empty it

  depends_on = [google_project_service.enabled]
}

data "archive_file" "function" {
  for_each = module.tables.functions

  type        = "zip"
  source_dir  = "${local.function_dist_dir}/${each.key}"
  output_path = "${path.module}/.build/${each.key}.zip"
}

resource "google_storage_bucket_object" "function" {
  for_each = module.tables.functions

  name   = "functions/${each.key}-${data.archive_file.function[each.key].output_md5}.zip"
  bucket = google_storage_bucket.sources.name
  source = data.archive_file.function[each.key].output_path
}

# Cloud Functions' vCPU share for each memory size the table uses (gen2: 256Mi 0.167, 512Mi 0.333).
locals {
  default_function_cpu = { "256Mi" = "0.167", "512Mi" = "0.333", "1Gi" = "0.583", "2Gi" = "1" }
}

resource "google_cloudfunctions2_function" "fn" {
  for_each = module.tables.functions

  lifecycle {
    # A misspelled name in function_cpu would leave that function at its default share, unseen.
    precondition {
      condition     = alltrue([for name in keys(var.function_cpu) : contains(keys(module.tables.functions), name)])
      error_message = "function_cpu names a function shared/topology/functions.json does not have: ${join(", ", setsubtract(keys(var.function_cpu), keys(module.tables.functions)))}."
    }
  }

  name        = each.key
  location    = var.region
  description = "proxyplane ${each.key} (from ${each.value.source_dir}, triggered by ${each.value.topic})"

  build_config {
    runtime         = "nodejs22"
    entry_point     = each.value.entry_point
    service_account = google_service_account.builder.id

    source {
      storage_source {
        bucket = google_storage_bucket.sources.name
        object = google_storage_bucket_object.function[each.key].name
      }
    }
  }

  service_config {
    available_memory = each.value.available_memory
    # Always sent: the provider keeps a value it no longer sends (Optional+Computed), so a function taken
    # out of function_cpu would stay at its raised CPU, and cost, unseen. Cloud Functions' own share else.
    available_cpu                  = lookup(var.function_cpu, each.key, lookup(local.default_function_cpu, each.value.available_memory, null))
    timeout_seconds                = each.value.timeout_seconds
    min_instance_count             = 0
    max_instance_count             = lookup(local.function_max_instances, each.key, var.function_max_instances)
    ingress_settings               = "ALLOW_INTERNAL_ONLY" # Pub/Sub push and Eventarc count as internal
    all_traffic_on_latest_revision = true
    service_account_email          = google_service_account.function[each.key].email
    environment_variables          = merge(local.runtime_env, lookup(local.function_env, each.key, {}))
    vpc_connector                  = contains(local.proxy_egress_functions, each.key) ? google_vpc_access_connector.probe.id : null
    vpc_connector_egress_settings  = contains(local.proxy_egress_functions, each.key) ? "ALL_TRAFFIC" : null
  }

  dynamic "event_trigger" {
    for_each = local.push_mode ? [] : [each.value]

    content {
      trigger_region        = var.region
      event_type            = "google.cloud.pubsub.topic.v1.messagePublished"
      pubsub_topic          = google_pubsub_topic.topic[event_trigger.value.topic].id
      retry_policy          = event_trigger.value.retry_policy
      service_account_email = google_service_account.pubsub_push.email
    }
  }

  # Firestore: every function reads or writes it from its first delivery. The grants on single resources
  # too: a create refused for want of actAs on the proxy VM account, or a publish for want of a topic
  # grant, in the minutes a new grant takes to propagate, is what a first proxy meets (docs/deploy.md
  # step 2 makes them all ahead of this apply).
  depends_on = [
    google_project_service.enabled,
    google_project_iam_member.component,
    google_pubsub_topic_iam_member.component,
    google_secret_manager_secret_iam_member.metadata_reader,
    google_service_account_iam_member.reconcile_attaches_proxy_vm_account,
    google_firestore_database.default,
  ]
}

# The push identity (and, in eventarc mode, the trigger identity) may invoke each function's Cloud Run
# service — and nothing else: the functions are internal-only and have no other invoker.
resource "google_cloud_run_v2_service_iam_member" "push_invokes_function" {
  for_each = google_cloudfunctions2_function.fn

  location = var.region
  name     = each.value.name
  role     = "roles/run.invoker"
  member   = google_service_account.pubsub_push.member
}
