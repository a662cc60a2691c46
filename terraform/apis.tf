# The Google APIs the plane calls or deploys onto. disable_on_destroy = false: turning an API off on
# `terraform destroy` would break anything else in the project that uses it.

locals {
  services = toset([
    "artifactregistry.googleapis.com",     # api and gateway images, gen2 function builds
    "cloudbuild.googleapis.com",           # gen2 function builds, `gcloud builds submit` of the images
    "cloudfunctions.googleapis.com",       # reconcile, requeue, probe, gc, rotation, snapshot
    "cloudresourcemanager.googleapis.com", # project IAM bindings and custom roles
    "cloudscheduler.googleapis.com",       # ticks from schedules.json
    "compute.googleapis.com",              # proxy VMs, VPC, NAT, firewall
    "eventarc.googleapis.com",             # gen2 functions depend on it even with push delivery
    "firestore.googleapis.com",            # proxies, leases, cooldowns, health, workers, snapshots, jobRuns
    "iam.googleapis.com",                  # service accounts and the custom roles
    "iamcredentials.googleapis.com",       # OIDC tokens that Pub/Sub push presents to the functions
    "logging.googleapis.com",              # log-based metrics
    "monitoring.googleapis.com",           # alert policies
    "pubsub.googleapis.com",               # every topic of pubsub.json
    "run.googleapis.com",                  # api, gateway, and the services behind gen2 functions
    "secretmanager.googleapis.com",        # proxy credentials and cloud-init, with rotation notifications
    "storage.googleapis.com",              # function source archives
    "vpcaccess.googleapis.com",            # the probe function's connector to the static NAT egress
  ])
}

resource "google_project_service" "enabled" {
  for_each = local.services

  service                    = each.value
  disable_on_destroy         = false
  disable_dependent_services = false
}

# Service agents that get roles below; creating them explicitly avoids granting a role to an agent
# that the service has not created yet (Secret Manager creates its agent lazily).
resource "google_project_service_identity" "pubsub" {
  provider = google-beta
  service  = "pubsub.googleapis.com"

  depends_on = [google_project_service.enabled]
}

resource "google_project_service_identity" "secretmanager" {
  provider = google-beta
  service  = "secretmanager.googleapis.com"

  depends_on = [google_project_service.enabled]
}
