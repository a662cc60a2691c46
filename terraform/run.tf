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
# authenticates every caller itself (Google identity tokens checked against ADMIN_PRINCIPALS,
# CRAWLER_PRINCIPALS and, for workers, GATEWAY_SERVICE_ACCOUNT), so unauthenticated requests reach the
# app and get its 401 {"error": …} — and org policies that forbid allUsers bindings do not apply.
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
        limits            = { cpu = "1", memory = "512Mi" }
        cpu_idle          = true
        startup_cpu_boost = true
      }

      dynamic "env" {
        for_each = merge(local.runtime_env, {
          ADMIN_PRINCIPALS        = join(",", var.admin_principals)
          CRAWLER_PRINCIPALS      = join(",", var.crawler_principals)
          GATEWAY_SERVICE_ACCOUNT = google_service_account.gateway.email
        })
        content {
          name  = env.key
          value = env.value
        }
      }

      startup_probe {
        http_get {
          path = "/healthz"
        }
      }
    }
  }

  depends_on = [google_project_service.enabled]
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

      ports {
        container_port = 8080
      }

      resources {
        limits            = { cpu = "1", memory = "512Mi" }
        cpu_idle          = false
        startup_cpu_boost = true
      }

      dynamic "env" {
        for_each = merge(local.runtime_env, {
          CONTROL_PLANE_URL = google_cloud_run_v2_service.api.uri
        })
        content {
          name  = env.key
          value = env.value
        }
      }

      startup_probe {
        http_get {
          path = "/healthz"
        }
      }
    }
  }

  depends_on = [google_project_service.enabled, google_compute_router_nat.egress]
}

# Crawlers call the gateway with their own identity tokens; Cloud Run checks them (roles/run.invoker).
resource "google_cloud_run_v2_service_iam_member" "crawler_invokes_gateway" {
  for_each = toset(var.crawler_principals)

  location = var.region
  name     = google_cloud_run_v2_service.gateway.name
  role     = "roles/run.invoker"
  member   = each.value
}
