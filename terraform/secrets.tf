# Secret Manager secrets (var.secrets) with rotation notifications: every secret publishes its
# SECRET_VERSION_ADD / … events to the topic the rotation function consumes, which re-enqueues every
# proxy whose spec references the secret (the seed's Secret watch). Values never pass through Terraform:
# versions are added with `gcloud secrets versions add` (docs/deploy.md).

locals {
  secret_events_topic = "secret-events"

  # Who may read which kind of secret — each grant is on the secret itself, never project-wide.
  secret_readers = {
    # A lease response carries the credentials (API); the gateway chains through the proxy with them;
    # the probe authenticates its probes; the proxy VM configures itself with its own.
    proxy-credentials = {
      api      = google_service_account.api.member
      gateway  = google_service_account.gateway.member
      probe    = google_service_account.function["probe"].member
      proxy-vm = google_service_account.proxy_vm.member
    }
    # Resolved by reconcile into the instance's user-data (and its spec hash: rotation replaces the VM).
    cloud-init = {
      reconcile = google_service_account.function["reconcile"].member
    }
  }

  secret_grants = merge([
    for id, s in var.secrets : {
      for reader, member in local.secret_readers[s.kind] : "${id}/${reader}" => { secret = id, member = member }
    }
  ]...)
}

resource "google_secret_manager_secret" "secret" {
  for_each = var.secrets

  secret_id   = each.key
  labels      = { kind = each.value.kind }
  annotations = each.value.description == "" ? {} : { description = each.value.description }

  replication {
    auto {}
  }

  topics {
    name = google_pubsub_topic.topic[local.secret_events_topic].id
  }

  depends_on = [google_pubsub_topic_iam_member.secretmanager_publishes_events]
}

resource "google_secret_manager_secret_iam_member" "reader" {
  for_each = local.secret_grants

  secret_id = google_secret_manager_secret.secret[each.value.secret].id
  role      = "roles/secretmanager.secretAccessor"
  member    = each.value.member
}

# Secret Manager's service agent publishes the notifications; without this the secret cannot be created
# with a topic (https://cloud.google.com/secret-manager/docs/event-notifications).
resource "google_pubsub_topic_iam_member" "secretmanager_publishes_events" {
  topic  = google_pubsub_topic.topic[local.secret_events_topic].name
  role   = "roles/pubsub.publisher"
  member = "serviceAccount:${google_project_service_identity.secretmanager.email}"
}
