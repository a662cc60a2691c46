# Secret Manager secrets (var.secrets) with rotation notifications: every secret publishes its
# SECRET_VERSION_ADD / … events to the topic the rotation function consumes, which re-enqueues every
# proxy whose spec references the secret (the seed's Secret watch). Values never pass through Terraform:
# versions are added with `gcloud secrets versions add` (docs/deploy.md).

locals {
  secret_events_topic = "secret-events"

  # Who may read which kind of secret's payload (roles/secretmanager.secretAccessor: versions.access
  # only) — each grant is on the secret itself, never project-wide.
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
    # Who may use the gateway's fetch endpoint; Cloud Run hands it to the gateway as GATEWAY_CLIENT_USERS.
    gateway-clients = {
      gateway = google_service_account.gateway.member
    }
    # Crawler and admin tokens; Cloud Run hands them to the API as DISCOVERY_TOKENS and ADMIN_TOKENS.
    discovery-tokens = {
      api = google_service_account.api.member
    }
    admin-tokens = {
      api = google_service_account.api.member
    }
  }

  # Who may read a version's metadata but never its payload (roles/secretmanager.viewer: secrets.get,
  # versions.get/list). Reconcile resolves a proxy's credentialsRef (`latest` → `…/versions/7`) with
  # GetSecretVersion, which needs secretmanager.versions.get — secretAccessor does not carry it — and puts
  # only that name in the VM's metadata: the VM reads the value itself at boot.
  secret_metadata_readers = {
    proxy-credentials = {
      reconcile = google_service_account.function["reconcile"].member
    }
  }

  # The secret id of each single-secret kind, or null (variables.tf allows at most one of each).
  secret_of_kind = {
    for kind in ["discovery-tokens", "admin-tokens", "gateway-clients"] :
    kind => one([for id, s in var.secrets : id if s.kind == kind])
  }

  secret_grants = merge([
    for id, s in var.secrets : {
      for reader, member in local.secret_readers[s.kind] : "${id}/${reader}" => { secret = id, member = member }
    }
  ]...)

  secret_metadata_grants = merge([
    for id, s in var.secrets : {
      for reader, member in lookup(local.secret_metadata_readers, s.kind, {}) :
      "${id}/${reader}" => { secret = id, member = member }
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

  # Secret Manager checks its agent may publish to the topic when the secret is created: the grant
  # must be in force, not just made (time_sleep.secret_events_grant_settles, below).
  depends_on = [time_sleep.secret_events_grant_settles]
}

resource "google_secret_manager_secret_iam_member" "reader" {
  for_each = local.secret_grants

  secret_id = google_secret_manager_secret.secret[each.value.secret].id
  role      = "roles/secretmanager.secretAccessor"
  member    = each.value.member
}

resource "google_secret_manager_secret_iam_member" "metadata_reader" {
  for_each = local.secret_metadata_grants

  secret_id = google_secret_manager_secret.secret[each.value.secret].id
  role      = "roles/secretmanager.viewer"
  member    = each.value.member
}

# Secret Manager's service agent publishes the notifications; without this the secret cannot be created
# with a topic (https://cloud.google.com/secret-manager/docs/event-notifications).
resource "google_pubsub_topic_iam_member" "secretmanager_publishes_events" {
  topic  = google_pubsub_topic.topic[local.secret_events_topic].name
  role   = "roles/pubsub.publisher"
  member = "serviceAccount:${google_project_service_identity.secretmanager.email}"
}

# A grant is made at once but in force everywhere only later: "typically 2 minutes, potentially 7
# minutes or longer" (https://cloud.google.com/iam/docs/access-change-propagation). Created once with
# the grant: a later apply that changes nothing here waits for nothing.
resource "time_sleep" "secret_events_grant_settles" {
  create_duration = var.iam_propagation_wait
  triggers        = { grant = google_pubsub_topic_iam_member.secretmanager_publishes_events.id }
}
