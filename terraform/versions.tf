terraform {
  # 1.9: variable validations may refer to other variables (gateway_max_instances).
  required_version = ">= 1.9.0"

  required_providers {
    google = {
      source  = "hashicorp/google"
      version = "~> 6.14"
    }
    # Only for google_project_service_identity: it makes the Pub/Sub and Secret Manager service agents
    # exist before they are granted roles (Secret Manager creates its agent lazily otherwise).
    google-beta = {
      source  = "hashicorp/google-beta"
      version = "~> 6.14"
    }
    # Zips dist/functions/<name> (built by terraform/build/build-sources.ts) for Cloud Functions.
    archive = {
      source  = "hashicorp/archive"
      version = "~> 2.6"
    }
    # Only for time_sleep: a new IAM grant takes minutes to reach every check (pubsub.tf
    # push_grants_settle, secrets.tf secret_events_grant_settles).
    time = {
      source  = "hashicorp/time"
      version = "~> 0.12"
    }
  }
}

provider "google" {
  project        = var.project_id
  region         = var.region
  default_labels = local.labels
}

provider "google-beta" {
  project        = var.project_id
  region         = var.region
  default_labels = local.labels
}

locals {
  labels = merge(var.labels, { app = "proxyplane" })
}

# The one place the repo's topology tables enter Terraform: every topic, subscription, function and
# Scheduler job below is a for_each over these maps, never a restatement of them.
module "tables" {
  source       = "./modules/tables"
  topology_dir = "${path.module}/../shared/topology"
}
