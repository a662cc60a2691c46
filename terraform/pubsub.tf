# Every topic of shared/topology/pubsub.json, and (function_trigger = "pubsub-push") one push subscription
# per consumed topic carrying the table's GCP retry policy, ack deadline and dead-letter policy. The
# local plane creates the same subscriptions on the emulator from the same table (with localRetry).

locals {
  push_mode = var.function_trigger == "pubsub-push"
}

resource "google_pubsub_topic" "topic" {
  for_each = module.tables.topics

  name = each.key

  depends_on = [google_project_service.enabled]
}

# The grants a push delivery needs — the push identity may invoke each function, Pub/Sub may mint its
# tokens and publish dead letters — are made at once but in force everywhere only later: "typically 2
# minutes, potentially 7 minutes or longer" (https://cloud.google.com/iam/docs/access-change-propagation).
# The subscriptions wait after them, once: a later apply waits again only for a grant it makes (a new
# function). Until they exist, ticks published have no subscription and are dropped, which is harmless.
resource "time_sleep" "push_grants_settle" {
  count = local.push_mode ? 1 : 0

  create_duration = var.iam_propagation_wait
  triggers = {
    invokers    = join(",", sort([for g in google_cloud_run_v2_service_iam_member.push_invokes_function : g.id]))
    token_mint  = google_service_account_iam_member.pubsub_agent_mints_push_tokens.id
    dead_letter = google_pubsub_topic_iam_member.pubsub_agent_publishes_dead_letters.id
  }
}

resource "google_pubsub_subscription" "push" {
  for_each = local.push_mode ? module.tables.push_subscriptions : {}

  name                 = each.key
  topic                = google_pubsub_topic.topic[each.value.topic].id
  ack_deadline_seconds = each.value.ack_deadline_seconds

  retry_policy {
    minimum_backoff = each.value.minimum_backoff
    maximum_backoff = each.value.maximum_backoff
  }

  dead_letter_policy {
    dead_letter_topic     = google_pubsub_topic.topic[each.value.dead_letter_topic].id
    max_delivery_attempts = each.value.max_delivery_attempts
  }

  # The /projects/<p>/topics/<topic> path is how functions-framework names the CloudEvent's source when
  # it converts a raw push body (the local plane pushes to the same path on the emulator). The audience
  # is the bare service URL, which Cloud Run accepts for the OIDC token.
  push_config {
    push_endpoint = "${google_cloudfunctions2_function.fn[each.value.consumer].service_config[0].uri}/projects/${var.project_id}/topics/${each.value.topic}"

    oidc_token {
      service_account_email = google_service_account.pubsub_push.email
      audience              = google_cloudfunctions2_function.fn[each.value.consumer].service_config[0].uri
    }
  }

  expiration_policy {
    ttl = "" # never expire for inactivity: a quiet topic (ticks-gc at night) must keep its subscription
  }

  # Every grant a delivery needs is in force before the first one (time_sleep.push_grants_settle,
  # above): otherwise early ticks (5 attempts over about two minutes) can be refused 403 and
  # dead-lettered on a fresh project, and the dead-letters alert fires at once.
  depends_on = [time_sleep.push_grants_settle]
}

# Where operators read what the push subscriptions gave up on (docs/operations.md). 7 days of retention
# and no expiry: a dead letter must still be there when someone looks.
resource "google_pubsub_subscription" "dead_letters_inspect" {
  name                       = module.tables.dead_letter_inspect_subscription
  topic                      = google_pubsub_topic.topic[module.tables.dead_letter_topic].id
  ack_deadline_seconds       = 60
  message_retention_duration = "604800s"

  expiration_policy {
    ttl = ""
  }
}

# Dead-lettering is done by the Pub/Sub service agent: it must publish to the dead-letter topic and
# subscribe to (acknowledge from) each source subscription
# (https://cloud.google.com/pubsub/docs/handling-failures#grant_forwarding_permissions).
resource "google_pubsub_topic_iam_member" "pubsub_agent_publishes_dead_letters" {
  topic  = google_pubsub_topic.topic[module.tables.dead_letter_topic].name
  role   = "roles/pubsub.publisher"
  member = "serviceAccount:${google_project_service_identity.pubsub.email}"
}

resource "google_pubsub_subscription_iam_member" "pubsub_agent_forwards_dead_letters" {
  for_each = google_pubsub_subscription.push

  subscription = each.value.name
  role         = "roles/pubsub.subscriber"
  member       = "serviceAccount:${google_project_service_identity.pubsub.email}"
}
