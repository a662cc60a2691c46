# Offline tests of the table decoding (`terraform init && terraform test`, no provider needed).

run "real_tables_wire_every_function_to_its_topic" {
  command = plan

  variables {
    topology_dir = "../../../shared/topology"
  }

  assert {
    condition = alltrue([
      for name, f in output.functions :
      output.push_subscriptions[f.subscription].topic == f.topic && output.push_subscriptions[f.subscription].consumer == name
    ])
    error_message = "every function must have a push subscription on its own trigger topic"
  }
  assert {
    condition     = length(output.push_subscriptions) == length(output.functions)
    error_message = "exactly one push subscription per function"
  }
  assert {
    condition     = keys(output.schedules) == keys(jsondecode(file("../../../shared/topology/schedules.json")).jobs)
    error_message = "every Scheduler job of schedules.json, and no other"
  }
  assert {
    condition = alltrue([
      for name, j in output.schedules :
      jsondecode(j.data_json) == jsondecode(file("../../../shared/topology/schedules.json")).jobs[name].data
    ])
    error_message = "a job publishes exactly the data the local scheduler publishes"
  }
  assert {
    condition     = alltrue([for s in output.push_subscriptions : s.dead_letter_topic == output.dead_letter_topic])
    error_message = "every push subscription dead-letters to the table's dead-letter topic"
  }
  assert {
    condition     = output.dead_letter_inspect_subscription == "dead-letters-inspect"
    error_message = "the inspect subscription is the one pubsub.json's description names"
  }
}

run "fixture_derivations" {
  command = plan

  variables {
    topology_dir = "tests/fixtures/valid"
  }

  assert {
    condition     = output.functions["sweep"].retry_policy == "RETRY_POLICY_DO_NOT_RETRY" && output.functions["worker"].retry_policy == "RETRY_POLICY_RETRY"
    error_message = "retry: true maps to RETRY_POLICY_RETRY, false to RETRY_POLICY_DO_NOT_RETRY"
  }
  assert {
    condition     = output.functions["sweep"].entry_point == "sweepTarget" && output.functions["sweep"].source_dir == "functions/sweep"
    error_message = "entry point is the table's target, source its folder"
  }
  assert {
    condition     = output.functions["worker"].timeout_seconds == 540 && output.functions["worker"].available_memory == "1Gi"
    error_message = "limits come from the table"
  }
  assert {
    condition = output.push_subscriptions["worker-push"] == {
      topic                 = "work"
      consumer              = "worker"
      ack_deadline_seconds  = 120
      minimum_backoff       = "5s"
      maximum_backoff       = "600s"
      max_delivery_attempts = 15
      dead_letter_topic     = "dead-letters"
    }
    error_message = "push subscription carries the GCP retry (not localRetry), ack deadline and dead-letter policy"
  }
  assert {
    condition     = keys(output.push_subscriptions) == ["sweep-push", "worker-push"]
    error_message = "topics without a consumer get no push subscription"
  }
  assert {
    condition     = output.topics["fan-out"].consumer == null && length(output.topics) == 4
    error_message = "every topic is created, consumed or not"
  }
  assert {
    condition     = output.schedules["sweep-tick"].data_json == "{\"job\":\"sweep-tick\"}" && output.schedules["sweep-tick"].time_zone == "Etc/UTC"
    error_message = "job data is the JSON the local scheduler publishes, in the table's time zone"
  }
}

run "rejects_function_on_unknown_topic" {
  command = plan
  variables {
    topology_dir = "tests/fixtures/unknown-topic"
  }
  expect_failures = [output.functions]
}

run "rejects_consumer_that_is_not_a_function" {
  command = plan
  variables {
    topology_dir = "tests/fixtures/consumer-mismatch"
  }
  expect_failures = [output.functions, output.push_subscriptions]
}

run "rejects_job_on_unknown_topic" {
  command = plan
  variables {
    topology_dir = "tests/fixtures/job-unknown-topic"
  }
  expect_failures = [output.schedules]
}

run "rejects_backoff_gcp_refuses" {
  command = plan
  variables {
    topology_dir = "tests/fixtures/bad-retry"
  }
  expect_failures = [output.push_subscriptions]
}

run "rejects_consumed_dead_letter_topic" {
  command = plan
  variables {
    topology_dir = "tests/fixtures/dead-letter-consumed"
  }
  expect_failures = [output.topics, output.push_subscriptions]
}

run "rejects_missing_tables" {
  command = plan
  variables {
    topology_dir = "tests/fixtures"
  }
  expect_failures = [var.topology_dir]
}
