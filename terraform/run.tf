# The two long-lived Cloud Run services. Their images are built from this repo by Cloud Build
# (terraform/images/cloudbuild.yaml, one Dockerfile for both) into the Artifact Registry repository below
# and referenced by var.image_tag; see docs/deploy.md for the bootstrap order.

locals {
  image_repository = "${var.region}-docker.pkg.dev/${var.project_id}/${google_artifact_registry_repository.images.repository_id}"
  images = {
    api     = "${local.image_repository}/api:${var.image_tag}"
    gateway = "${local.image_repository}/gateway:${var.image_tag}"
  }
}

resource "google_artifact_registry_repository" "images" {
  repository_id = "proxyplane"
  location      = var.region
  format        = "DOCKER"
  description   = "proxyplane api and gateway images"

  depends_on = [google_project_service.enabled]
}

# Discovery, leases, admin and worker endpoints. Public ingress with Cloud Run's IAM check off: the API
# authenticates every caller itself — admins by Google identity token (ADMIN_EMAILS, for the audiences in
# ADMIN_AUDIENCES) or static token (ADMIN_TOKENS), crawlers by bearer token (DISCOVERY_TOKENS), workers by
# the gateway account's identity token (GATEWAY_SERVICE_ACCOUNT) — so an unauthenticated request reaches
# the app and gets its 401 {"error": …}, and org policies that forbid allUsers bindings do not apply.
data "google_project" "this" {
  project_id = var.project_id
}

locals {
  # The service cannot read its own `uri` attribute, but Cloud Run's deterministic URL is known upfront
  # (https://cloud.google.com/run/docs/triggering/https-request#deterministic).
  api_url = "https://proxyplane-api-${data.google_project.this.number}.${var.region}.run.app"
  # The audience `gcloud auth print-identity-token` puts in a user's token (functions/api/src/auth).
  gcloud_cli_audience = "32555940559.apps.googleusercontent.com"

  # Plain environment of the API. Workers' identity tokens are checked against WORKER_AUDIENCES: the
  # service URL alone, the gateway's CONTROL_PLANE_URL, the audience it mints its tokens for — not the
  # gcloud CLI's audience admins' tokens may carry, so that a token minted for gcloud cannot pass as a
  # worker's (functions/api/src/workers/config.ts).
  api_env = {
    ADMIN_EMAILS            = join(",", var.admin_emails)
    ADMIN_AUDIENCES         = join(",", [local.api_url, local.gcloud_cli_audience])
    WORKER_AUDIENCES        = local.api_url
    GATEWAY_SERVICE_ACCOUNT = google_service_account.gateway.email
    # The only port google_compute_firewall.proxy_port opens: the API refuses a managed proxy on any
    # other (it would boot and never be reachable).
    MANAGED_PROXY_PORTS = tostring(var.proxy_port)
    # Per-caller rate limits by route class, and failed authentications per client address
    # (functions/api/src/config.ts, docs/api.md § Rate limits).
    RATE_LIMIT_LEASE_ACQUIRE = var.api_rate_limits.lease_acquire
    RATE_LIMIT_LEASE_OTHER   = var.api_rate_limits.lease_other
    RATE_LIMIT_DISCOVERY     = var.api_rate_limits.discovery
    RATE_LIMIT_ADMIN_WRITE   = var.api_rate_limits.admin_write
    RATE_LIMIT_ADMIN_READ    = var.api_rate_limits.admin_read
    RATE_LIMIT_AUTH_FAILURE  = var.api_rate_limits.auth_failure
  }

  # Secret-backed environment of the API: variable name => secret kind (secrets.tf).
  api_secret_env = {
    DISCOVERY_TOKENS = "discovery-tokens"
    ADMIN_TOKENS     = "admin-tokens"
  }

  gateway_env = {
    # The API's deterministic URL, not google_cloud_run_v2_service.api.uri (the hashed *.a.run.app
    # one): the gateway mints its identity token for exactly this string (functions/gateway/src/
    # control/token.ts), and the API accepts a worker's token only for the audience in WORKER_AUDIENCES.
    CONTROL_PLANE_URL = local.api_url
    # Cloud Run routes only $PORT (the fetch endpoint); the raw CONNECT listener stays off here.
    GATEWAY_PROXY_PORT = "off"
    GATEWAY_GC_MARKING = var.gateway_gc_marking
  }

  # The gateway container's command: the image's own (`node .`, terraform/images/Dockerfile), with V8's
  # single-threaded GC unless gateway_gc_threads says parallel — a Node flag, which no environment
  # variable can set (functions/gateway/src/gc-threads.ts). The CONNECT VMs build the same one from
  # their gc-threads metadata (scripts/gateway-connect-startup.sh).
  gateway_args = var.gateway_gc_threads == "single" ? ["node", "--single-threaded-gc", "."] : ["node", "."]

  # The gateway's client users, from the gateway-clients secret (variables.tf requires exactly one: the
  # gateway refuses to start without client credentials, functions/gateway/src/config.ts).
  gateway_secret_env = {
    GATEWAY_CLIENT_USERS = "gateway-clients"
  }
}

resource "google_cloud_run_v2_service" "api" {
  name                 = "proxyplane-api"
  location             = var.region
  ingress              = "INGRESS_TRAFFIC_ALL"
  invoker_iam_disabled = true
  deletion_protection  = false

  template {
    service_account                  = google_service_account.api.email
    max_instance_request_concurrency = 80

    scaling {
      min_instance_count = 0
      max_instance_count = var.api_max_instances
    }

    containers {
      image = local.images.api

      ports {
        container_port = 8080
      }

      resources {
        limits = { cpu = "1", memory = "512Mi" }
        # CPU always allocated, as the gateway's: leases and discovery decide on views that Firestore
        # listeners keep (the proxy catalog, cooldowns, gateway ownership; docs/leases.md), and with CPU
        # only inside requests those streams stall between them — the first acquire after a quiet spell
        # decided on what the listener last saw: a proxy deleted, cordoned or cooling down handed out.
        # Instance-based billing; the probe's echo keeps one instance up anyway (docs/cost.md).
        cpu_idle          = false
        startup_cpu_boost = true
      }

      dynamic "env" {
        for_each = merge(local.runtime_env, local.api_env)
        content {
          name  = env.key
          value = env.value
        }
      }

      # Tokens straight from Secret Manager, only for the kinds that have a secret.
      dynamic "env" {
        for_each = { for name, kind in local.api_secret_env : name => local.secret_of_kind[kind] if local.secret_of_kind[kind] != null }
        content {
          name = env.key
          value_source {
            secret_key_ref {
              secret  = google_secret_manager_secret.secret[env.value].secret_id
              version = "latest"
            }
          }
        }
      }

      startup_probe {
        http_get {
          path = "/healthz"
        }
      }
    }
  }

  depends_on = [
    google_project_service.enabled,
    google_secret_manager_secret_iam_member.reader, # the revision reads its tokens at start
    google_firestore_database.default,              # and serves from Firestore from its first request
    google_pubsub_topic_iam_member.component,       # publishes reconcile requests from its first create
  ]
}

# The gateway worker: long-lived, holds its snapshot and ownership epoch in memory, pulls snapshots from
# its own filtered subscription and reports runtime/outcomes to the API. Hence at least one warm instance
# with CPU always allocated (cpu_idle = false): the Pub/Sub stream, the report queue and snapshot
# expiry keep running between requests. Cloud Run's front end carries HTTP only, so crawlers use the
# gateway's fetch-through-the-fleet endpoint here; its CONNECT listener needs raw TCP (docs/deploy.md).
# Egress goes through the VPC and Cloud NAT so that the proxy firewall can admit its static address.
resource "google_cloud_run_v2_service" "gateway" {
  name                = "proxyplane-gateway"
  location            = var.region
  ingress             = "INGRESS_TRAFFIC_ALL"
  deletion_protection = false

  template {
    service_account                  = google_service_account.gateway.email
    timeout                          = "300s"
    max_instance_request_concurrency = 250

    scaling {
      min_instance_count = var.gateway_min_instances
      max_instance_count = var.gateway_max_instances
    }

    vpc_access {
      egress = "ALL_TRAFFIC"
      network_interfaces {
        network    = google_compute_network.plane.id
        subnetwork = google_compute_subnetwork.gateway_egress.id
      }
    }

    containers {
      image = local.images.gateway
      args  = local.gateway_args

      ports {
        container_port = 8080
      }

      resources {
        limits            = { cpu = "1", memory = "512Mi" }
        cpu_idle          = false
        startup_cpu_boost = true
      }

      dynamic "env" {
        for_each = merge(local.runtime_env, local.gateway_env)
        content {
          name  = env.key
          value = env.value
        }
      }

      # Client users of the fetch endpoint, straight from Secret Manager (never a plain env value).
      dynamic "env" {
        for_each = { for name, kind in local.gateway_secret_env : name => local.secret_of_kind[kind] }
        content {
          name = env.key
          value_source {
            secret_key_ref {
              secret  = google_secret_manager_secret.secret[env.value].secret_id
              version = "latest"
            }
          }
        }
      }

      # The gateway opens $PORT only after waiting up to GATEWAY_START_WAIT_SECONDS (15) for its first
      # snapshot (functions/gateway/src/gateway.ts), which a first apply never has by then: Cloud Run's
      # default probe (3 × 10 s) would leave a few seconds past that wait. Two minutes: the gateway refuses
      # a GATEWAY_START_WAIT_SECONDS over 90 at start (functions/gateway/src/config.ts).
      startup_probe {
        period_seconds    = 5
        timeout_seconds   = 2
        failure_threshold = 24
        http_get {
          path = "/healthz"
        }
      }
    }
  }

  depends_on = [
    google_project_service.enabled,
    google_compute_router_nat.egress,
    google_secret_manager_secret_iam_member.reader, # the revision reads GATEWAY_CLIENT_USERS at start
    google_cloud_run_v2_service.api,                # it registers at CONTROL_PLANE_URL once started
  ]
}

# Crawlers call the gateway with their own identity tokens; Cloud Run checks them (roles/run.invoker), and
# the gateway then checks its own client credentials (Proxy-Authorization, from the gateway-clients secret).
resource "google_cloud_run_v2_service_iam_member" "crawler_invokes_gateway" {
  for_each = toset(var.crawler_principals)

  location = var.region
  name     = google_cloud_run_v2_service.gateway.name
  role     = "roles/run.invoker"
  member   = each.value
}
