# Decodes the repo's topology tables (shared/topology/*.json) into the maps the root module's for_each
# loops use, so Terraform never restates a topic, a subscription, a job or a function. Provider-free on
# purpose: `terraform init && terraform test` runs offline (see tests/), and the structural test in
# test/terraform/ reads these outputs from `terraform show -json`.

locals {
  pubsub    = jsondecode(file("${var.topology_dir}/pubsub.json"))
  schedule  = jsondecode(file("${var.topology_dir}/schedules.json"))
  functions = jsondecode(file("${var.topology_dir}/functions.json")).functions

  dead_letter_topic = local.pubsub.deadLetterTopic
  raw_topics        = local.pubsub.topics
  consumed_topics   = { for name, t in local.raw_topics : name => t if try(t.consumer, null) != null }

  topics = {
    for name, t in local.raw_topics : name => {
      name        = name
      description = t.description
      consumer    = try(t.consumer, null)
    }
  }

  # One push subscription per consumed topic, delivering to its consumer function. The name is the
  # consumer's, because functions.json gives each function exactly one trigger topic (grouped with `...`
  # so that a table breaking that rule fails a precondition in checks.tf instead of a duplicate key).
  push_subscription_groups = {
    for name, t in local.consumed_topics : "${t.consumer}-push" => {
      topic                 = name
      consumer              = t.consumer
      ack_deadline_seconds  = try(t.ackDeadlineSeconds, null)
      minimum_backoff       = try("${t.retry.minimumBackoffSeconds}s", null)
      maximum_backoff       = try("${t.retry.maximumBackoffSeconds}s", null)
      max_delivery_attempts = try(t.maxDeliveryAttempts, null)
      dead_letter_topic     = local.dead_letter_topic
    }...
  }
  push_subscriptions = { for name, group in local.push_subscription_groups : name => group[0] }

  function_map = {
    for name, f in local.functions : name => {
      name             = name
      source_dir       = f.source
      entry_point      = f.target
      topic            = f.topic
      retry            = f.retry
      retry_policy     = f.retry ? "RETRY_POLICY_RETRY" : "RETRY_POLICY_DO_NOT_RETRY"
      timeout_seconds  = f.timeoutSeconds
      available_memory = f.memory
      subscription     = "${name}-push"
    }
  }

  # data_json is what the local scheduler publishes (JSON of the job's `data`); the root base64-encodes it.
  schedules = {
    for name, j in local.schedule.jobs : name => {
      name        = name
      description = j.description
      schedule    = j.schedule
      time_zone   = local.schedule.timeZone
      topic       = j.topic
      data_json   = jsonencode(j.data)
    }
  }
}
