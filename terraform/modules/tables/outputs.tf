output "topics" {
  description = "Every topic of pubsub.json: name => {name, description, consumer (function name or null)}."
  value       = local.topics

  precondition {
    condition     = length(local.topics_with_bad_name) == 0
    error_message = "Topic ids Pub/Sub rejects: ${join(", ", local.topics_with_bad_name)}."
  }
  precondition {
    condition     = local.dead_letter_topic_ok
    error_message = "pubsub.json deadLetterTopic \"${local.dead_letter_topic}\" must be one of its topics, with no consumer."
  }
}

output "push_subscriptions" {
  description = "One push subscription per consumed topic: name => {topic, consumer, ack_deadline_seconds, minimum_backoff, maximum_backoff, max_delivery_attempts, dead_letter_topic}."
  value       = local.push_subscriptions

  precondition {
    condition     = length(local.consumed_topics_with_bad_delivery) == 0
    error_message = "Consumed topics without a valid ackDeadlineSeconds (10-600), retry (0 <= min <= max <= 600 s) and maxDeliveryAttempts (5-100): ${join(", ", local.consumed_topics_with_bad_delivery)}."
  }
  precondition {
    condition     = length(local.consumers_without_function) == 0
    error_message = "Topics whose consumer is not in functions.json: ${join(", ", local.consumers_without_function)}."
  }
  precondition {
    condition     = length(local.consumers_listening_elsewhere) == 0 && length(local.consumers_of_several_topics) == 0
    error_message = "Topics whose consumer's functions.json trigger topic is another one: ${join(", ", concat(local.consumers_listening_elsewhere, local.consumers_of_several_topics))}."
  }
}

output "dead_letter_topic" {
  description = "The topic every push subscription dead-letters to."
  value       = local.dead_letter_topic
}

output "dead_letter_inspect_subscription" {
  description = "The pull subscription operators read dead letters from (named in pubsub.json's description of the topic)."
  value       = "${local.dead_letter_topic}-inspect"
}

output "functions" {
  description = "Every function of functions.json: name => {name, source_dir, entry_point, topic, retry, retry_policy, timeout_seconds, available_memory, subscription}."
  value       = local.function_map

  precondition {
    condition     = length(local.functions_with_unknown_topic) == 0
    error_message = "Functions whose trigger topic is not in pubsub.json: ${join(", ", local.functions_with_unknown_topic)}."
  }
  precondition {
    condition     = length(local.functions_not_the_topics_consumer) == 0
    error_message = "Functions that pubsub.json does not name as their topic's consumer: ${join(", ", local.functions_not_the_topics_consumer)}."
  }
  precondition {
    condition     = length(local.functions_with_bad_limits) == 0
    error_message = "Functions with a timeout outside 1-540 s or a memory not like 256Mi / 1Gi: ${join(", ", local.functions_with_bad_limits)}."
  }
  precondition {
    condition     = length(local.functions_with_bad_name) == 0
    error_message = "Functions whose name is not a valid Cloud Functions id or whose source is not under functions/: ${join(", ", local.functions_with_bad_name)}."
  }
}

output "schedules" {
  description = "Every Scheduler job of schedules.json: name => {name, description, schedule, time_zone, topic, data_json}."
  value       = local.schedules

  precondition {
    condition     = length(local.jobs_with_unknown_topic) == 0
    error_message = "Scheduler jobs whose topic is not in pubsub.json: ${join(", ", local.jobs_with_unknown_topic)}."
  }
  precondition {
    condition     = length(local.jobs_with_bad_schedule) == 0
    error_message = "Scheduler jobs without a 5-field cron schedule or with an invalid name: ${join(", ", local.jobs_with_bad_schedule)}."
  }
}
