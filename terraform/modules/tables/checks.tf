# What a table must satisfy before anything is deployed from it. Each list names the offenders, so a
# failed precondition (outputs.tf) says exactly which row is wrong. Limits are GCP's:
# Pub/Sub ack deadline 10-600 s, backoff 0-600 s, dead-letter attempts 5-100
# (https://cloud.google.com/pubsub/docs/handling-failures); event-driven gen2 functions time out at
# most at 540 s (https://cloud.google.com/functions/quotas).

locals {
  topic_names = keys(local.raw_topics)

  functions_with_unknown_topic = [
    for name, f in local.functions : name if !contains(local.topic_names, f.topic)
  ]
  functions_not_the_topics_consumer = [
    for name, f in local.functions : name
    if contains(local.topic_names, f.topic) && try(local.raw_topics[f.topic].consumer, null) != name
  ]
  consumers_without_function = [
    for name, t in local.consumed_topics : "${name} -> ${t.consumer}" if !contains(keys(local.functions), t.consumer)
  ]
  consumers_listening_elsewhere = [
    for name, t in local.consumed_topics : "${name} -> ${t.consumer}"
    if contains(keys(local.functions), t.consumer) && try(local.functions[t.consumer].topic, null) != name
  ]
  consumers_of_several_topics = [for name, group in local.push_subscription_groups : name if length(group) > 1]
  functions_with_bad_limits = [
    for name, f in local.functions : name
    if !(f.timeoutSeconds >= 1 && f.timeoutSeconds <= 540 && can(regex("^[0-9]+(Mi|Gi)$", f.memory)))
  ]
  functions_with_bad_name = [
    for name, f in local.functions : name
    if !can(regex("^[a-z][a-z0-9-]{0,61}[a-z0-9]$", name)) || !startswith(f.source, "functions/")
  ]

  consumed_topics_with_bad_delivery = [
    for name, t in local.consumed_topics : name
    if !(
      try(t.ackDeadlineSeconds >= 10 && t.ackDeadlineSeconds <= 600, false) &&
      try(t.retry.minimumBackoffSeconds >= 0 && t.retry.minimumBackoffSeconds <= t.retry.maximumBackoffSeconds, false) &&
      try(t.retry.maximumBackoffSeconds <= 600, false) &&
      try(t.maxDeliveryAttempts >= 5 && t.maxDeliveryAttempts <= 100, false)
    )
  ]
  topics_with_bad_name = [
    for name in local.topic_names : name
    if !can(regex("^[a-zA-Z][-a-zA-Z0-9_.~+%]{2,254}$", name)) || startswith(name, "goog")
  ]
  dead_letter_topic_ok = contains(local.topic_names, local.dead_letter_topic) && try(local.raw_topics[local.dead_letter_topic].consumer, null) == null

  jobs_with_unknown_topic = [
    for name, j in local.schedule.jobs : name if !contains(local.topic_names, j.topic)
  ]
  jobs_with_bad_schedule = [
    for name, j in local.schedule.jobs : name
    if length(split(" ", trimspace(j.schedule))) != 5 || !can(regex("^[a-zA-Z0-9_-]{1,500}$", name))
  ]
}
