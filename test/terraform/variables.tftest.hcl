# The root module's variable validations, tested offline: terraform/validate.sh (which
# test/terraform/tooling.test.ts runs) copies terraform/variables.tf alone into a scratch module
# (variables need no provider) beside this file and runs `terraform test` there.

variables {
  project_id   = "proxyplane-test"
  image_tag    = "v1"
  admin_emails = ["ops@example.com"]
}

run "defaults_are_valid_and_closed" {
  command = plan
  assert {
    condition     = var.allow_open_proxy_firewall == false && length(var.crawler_cidrs) == 0
    error_message = "by default nothing but the plane's own egress may reach the proxy port"
  }
  assert {
    condition     = var.gateway_min_instances >= 1 && var.function_trigger == "pubsub-push"
    error_message = "one warm gateway and table-driven push delivery by default"
  }
  assert {
    condition     = var.gateway_connect_enabled == false && length(var.gateway_connect_client_cidrs) == 0
    error_message = "the CONNECT gateway VMs are opt-in: an existing deployment must plan no change"
  }
}

run "accepts_a_full_valid_set" {
  command = plan
  variables {
    region                = "europe-west4"
    firestore_location    = "eur3"
    crawler_cidrs         = ["203.0.113.0/24", "198.51.100.7/32"]
    gateway_min_instances = 2
    gateway_max_instances = 4
    proxy_port            = 8888
    secrets = {
      crawler-tokens  = { kind = "discovery-tokens" }
      admin-tokens    = { kind = "admin-tokens" }
      proxy-creds-a   = { kind = "proxy-credentials" }
      boot            = { kind = "cloud-init", description = "vm bootstrap" }
      gateway-clients = { kind = "gateway-clients" }
    }
    admin_emails             = ["ops@example.com", "deployer@proxyplane-test.iam.gserviceaccount.com"]
    crawler_principals       = ["serviceAccount:crawler@p.iam.gserviceaccount.com"]
    alert_emails             = ["oncall@example.com"]
    function_trigger         = "eventarc"
    labels                   = { team = "crawl" }
    max_snapshot_age_seconds = 75
    drift_poll_seconds       = 120
    api_rate_limits          = { lease_acquire = "0.5:3", admin_write = "5:50" }

    gateway_no_upstream_alert_percent      = 25
    gateway_outcome_drop_alert_percent     = 0
    gateway_suspect_fallback_alert_percent = 2.5
  }
}

run "api_rate_limits_keep_the_defaults_of_classes_left_out" {
  command = plan
  variables {
    api_rate_limits = { lease_acquire = "5:10" }
  }
  assert {
    condition     = var.api_rate_limits.lease_acquire == "5:10" && var.api_rate_limits.lease_other == "2000:4000"
    error_message = "a class left out of api_rate_limits keeps its default"
  }
}

run "api_rate_limits_auth_failure_defaults_to_10_a_second_burst_100" {
  command = plan
  variables {
    api_rate_limits = { lease_acquire = "5:10" }
  }
  assert {
    condition     = var.api_rate_limits.auth_failure == "10:100"
    error_message = "auth_failure left out of api_rate_limits keeps its default, the code's (DEFAULT_AUTH_FAILURE_RATE)"
  }
}

run "rejects_a_malformed_auth_failure_limit" {
  command = plan
  variables {
    api_rate_limits = { auth_failure = "10" }
  }
  expect_failures = [var.api_rate_limits]
}

run "rejects_a_malformed_rate_limit" {
  command = plan
  variables {
    api_rate_limits = { discovery = "1000/2000" }
  }
  expect_failures = [var.api_rate_limits]
}

run "rejects_a_zero_burst" {
  command = plan
  variables {
    api_rate_limits = { admin_read = "10:0" }
  }
  expect_failures = [var.api_rate_limits]
}

run "rejects_a_rate_over_the_bound" {
  command = plan
  variables {
    api_rate_limits = { lease_other = "200000:10" }
  }
  expect_failures = [var.api_rate_limits]
}

run "rejects_a_tick_failures_threshold_gc_sweep_never_reaches" {
  command = plan
  variables {
    tick_failures_alert_threshold = 6
  }
  expect_failures = [var.tick_failures_alert_threshold]
}

run "rejects_bad_project_id" {
  command = plan
  variables {
    project_id = "My_Project"
  }
  expect_failures = [var.project_id]
}

run "rejects_labels_reserved_for_proxy_vms" {
  command = plan
  variables {
    labels = { "managed-by" = "proxyplane" }
  }
  expect_failures = [var.labels]
}

run "rejects_bad_region" {
  command = plan
  variables {
    region = "us-central1-a"
  }
  expect_failures = [var.region]
}

run "rejects_malformed_crawler_cidr" {
  command = plan
  variables {
    crawler_cidrs = ["203.0.113.0/33"]
  }
  expect_failures = [var.crawler_cidrs]
}

run "rejects_open_world_through_crawler_cidrs" {
  command = plan
  variables {
    crawler_cidrs = ["0.0.0.0/0"]
  }
  expect_failures = [var.crawler_cidrs]
}

run "rejects_cold_gateway" {
  command = plan
  variables {
    gateway_min_instances = 0
  }
  expect_failures = [var.gateway_min_instances]
}

run "rejects_gateway_max_below_min" {
  command = plan
  variables {
    gateway_min_instances = 3
    gateway_max_instances = 2
  }
  expect_failures = [var.gateway_max_instances]
}

run "rejects_privileged_or_out_of_range_proxy_port" {
  command = plan
  variables {
    proxy_port = 80
  }
  expect_failures = [var.proxy_port]
}

run "rejects_unknown_trigger_mode" {
  command = plan
  variables {
    function_trigger = "http"
  }
  expect_failures = [var.function_trigger]
}

run "rejects_unknown_secret_kind" {
  command = plan
  variables {
    secrets = { tokens = { kind = "discovery-tokens" }, x = { kind = "password" } }
  }
  expect_failures = [var.secrets]
}

run "rejects_two_gateway_client_secrets" {
  command = plan
  variables {
    secrets = { tokens = { kind = "discovery-tokens" }, a = { kind = "gateway-clients" }, b = { kind = "gateway-clients" } }
  }
  expect_failures = [var.secrets]
}

run "rejects_secrets_without_gateway_clients" {
  command = plan
  variables {
    secrets = { tokens = { kind = "discovery-tokens" } }
  }
  expect_failures = [var.secrets]
}

run "rejects_stale_alert_at_or_after_the_worker_stops" {
  command = plan
  variables {
    max_snapshot_age_seconds = 120
  }
  expect_failures = [var.max_snapshot_age_seconds]
}

run "rejects_stale_alert_below_a_healthy_snapshot_age" {
  command = plan
  variables {
    max_snapshot_age_seconds = 60
  }
  expect_failures = [var.max_snapshot_age_seconds]
}

run "rejects_drift_poll_under_a_minute" {
  command = plan
  variables {
    drift_poll_seconds = 30
  }
  expect_failures = [var.drift_poll_seconds]
}

run "rejects_a_negative_replacement_cap" {
  command = plan
  variables {
    reconcile_max_replacing = -1
  }
  expect_failures = [var.reconcile_max_replacing]
}

run "rejects_secrets_without_discovery_tokens" {
  command = plan
  variables {
    secrets = { creds = { kind = "proxy-credentials" } }
  }
  expect_failures = [var.secrets]
}

run "accepts_admin_tokens_instead_of_admin_emails" {
  command = plan
  variables {
    admin_emails = []
    secrets      = { tokens = { kind = "discovery-tokens" }, admin = { kind = "admin-tokens" }, clients = { kind = "gateway-clients" } }
  }
}

run "rejects_no_admin_credential" {
  command = plan
  variables {
    admin_emails = []
  }
  expect_failures = [var.admin_emails]
}

run "rejects_malformed_admin_email" {
  command = plan
  variables {
    admin_emails = ["user:ops@example.com "]
  }
  expect_failures = [var.admin_emails]
}

run "rejects_admin_emails_the_api_refuses" {
  command = plan
  variables {
    admin_emails = ["ops@example"]
  }
  expect_failures = [var.admin_emails]
}

run "rejects_a_group_as_admin" {
  command = plan
  variables {
    admin_emails = ["group:admins@example.com"]
  }
  expect_failures = [var.admin_emails]
}

run "accepts_prefixed_admin_emails" {
  command = plan
  variables {
    admin_emails = ["user:ops@example.com", "serviceAccount:deployer@p.iam.gserviceaccount.com"]
  }
}

run "rejects_a_public_egress_subnet" {
  command = plan
  variables {
    egress_subnet_cidr = "203.0.113.0/26"
  }
  expect_failures = [var.egress_subnet_cidr]
}

run "rejects_an_egress_subnet_reaching_past_a_private_block" {
  command = plan
  variables {
    egress_subnet_cidr = "10.0.0.0/7"
  }
  expect_failures = [var.egress_subnet_cidr]
}

run "rejects_a_gateway_connect_subnet_reaching_past_a_private_block" {
  command = plan
  variables {
    gateway_connect_subnet_cidr = "192.168.0.0/15"
  }
  expect_failures = [var.gateway_connect_subnet_cidr]
}

run "rejects_a_public_connector_range" {
  command = plan
  variables {
    connector_cidr = "8.8.8.0/28"
  }
  expect_failures = [var.connector_cidr]
}

run "rejects_a_public_gateway_connect_subnet" {
  command = plan
  variables {
    gateway_connect_subnet_cidr = "172.32.0.0/27"
  }
  expect_failures = [var.gateway_connect_subnet_cidr]
}

run "accepts_private_ranges_of_every_kind" {
  command = plan
  variables {
    egress_subnet_cidr          = "192.168.10.0/26"
    connector_cidr              = "100.64.1.0/28"
    gateway_connect_subnet_cidr = "172.31.2.0/27"
  }
}

run "rejects_connector_range_not_28" {
  command = plan
  variables {
    connector_cidr = "10.8.1.0/27"
  }
  expect_failures = [var.connector_cidr]
}

run "rejects_small_egress_subnet" {
  command = plan
  variables {
    egress_subnet_cidr = "10.8.0.0/28"
  }
  expect_failures = [var.egress_subnet_cidr]
}

run "rejects_egress_subnet_too_small_for_the_gateway_max" {
  command = plan
  variables {
    gateway_max_instances = 100
  }
  expect_failures = [var.egress_subnet_cidr]
}

run "accepts_an_egress_subnet_sized_for_the_gateway_max" {
  command = plan
  variables {
    gateway_max_instances = 100
    egress_subnet_cidr    = "10.8.0.0/23"
  }
}

run "rejects_bad_image_tag" {
  command = plan
  variables {
    image_tag = "-latest"
  }
  expect_failures = [var.image_tag]
}

run "rejects_probe_loop_beyond_the_function_timeout" {
  command = plan
  variables {
    probe_loop_seconds = 106
  }
  expect_failures = [var.probe_loop_seconds]
}

run "accepts_an_http_echo_for_the_probe" {
  command = plan
  variables {
    probe_echo_url = "http://echo.example.net:8080/v1/echo?probe=1"
  }
  assert {
    condition     = var.probe_echo_url == "http://echo.example.net:8080/v1/echo?probe=1"
    error_message = "an operator's plain-http echo is what lets EGRESS see forwarding-header leaks"
  }
}

run "rejects_a_plain_http_echo_on_a_port_squid_refuses" {
  command = plan
  variables {
    probe_echo_url = "http://echo.example.net:81/v1/echo"
  }
  expect_failures = [var.probe_echo_url]
}

run "rejects_a_probe_echo_without_a_scheme" {
  command = plan
  variables {
    probe_echo_url = "echo.example.net/v1/echo"
  }
  expect_failures = [var.probe_echo_url]
}

run "rejects_a_probe_echo_the_prober_cannot_fetch" {
  command = plan
  variables {
    probe_echo_url = "ftp://echo.example.net/v1/echo"
  }
  expect_failures = [var.probe_echo_url]
}

run "accepts_a_probe_echo_at_an_address" {
  command = plan
  variables {
    probe_echo_url = "http://[2001:db8::1]:8080/v1/echo"
  }
  assert {
    condition     = var.probe_echo_url == "http://[2001:db8::1]:8080/v1/echo"
    error_message = "an IPv6 echo is a URL the probe reads"
  }
}

run "accepts_a_probe_echo_at_an_ipv4_address" {
  command = plan
  variables {
    probe_echo_url = "http://203.0.113.7/v1/echo"
  }
  assert {
    condition     = var.probe_echo_url == "http://203.0.113.7/v1/echo"
    error_message = "an IPv4 echo is a URL the probe reads"
  }
}

# Each of these passed the old pattern, and the probe refused it at start (its container exiting, the
# function's deploy failing with a health-check error far from the variable).
run "rejects_a_probe_echo_with_a_port_out_of_range" {
  command = plan
  variables {
    probe_echo_url = "http://echo.example.net:99999/v1/echo"
  }
  expect_failures = [var.probe_echo_url]
}

run "rejects_a_probe_echo_at_an_ipv4_address_out_of_range" {
  command = plan
  variables {
    probe_echo_url = "http://1.2.3.999/v1/echo"
  }
  expect_failures = [var.probe_echo_url]
}

run "rejects_a_probe_echo_at_an_ipv4_address_with_an_empty_part" {
  command = plan
  variables {
    probe_echo_url = "http://1..2.3/v1/echo"
  }
  expect_failures = [var.probe_echo_url]
}

run "rejects_a_probe_echo_with_a_percent_in_its_host" {
  command = plan
  variables {
    probe_echo_url = "http://exa%mple/v1/echo"
  }
  expect_failures = [var.probe_echo_url]
}

run "rejects_a_probe_echo_with_credentials" {
  command = plan
  variables {
    probe_echo_url = "http://user@:80/"
  }
  expect_failures = [var.probe_echo_url]
}

run "rejects_a_probe_echo_with_an_unclosed_ipv6_address" {
  command = plan
  variables {
    probe_echo_url = "http://[::1/"
  }
  expect_failures = [var.probe_echo_url]
}

run "rejects_a_probe_echo_with_a_space" {
  command = plan
  variables {
    probe_echo_url = "http://echo.example.net/v1 echo"
  }
  expect_failures = [var.probe_echo_url]
}

run "rejects_stale_alert_between_bucket_bounds" {
  command = plan
  variables {
    max_snapshot_age_seconds = 80
  }
  expect_failures = [var.max_snapshot_age_seconds]
}

run "accepts_debug_log_level" {
  command = plan
  variables {
    log_level = "debug"
  }
}

run "rejects_log_levels_that_drop_alerting_lines" {
  command = plan
  variables {
    log_level = "warn"
  }
  expect_failures = [var.log_level]
}

run "rejects_error_log_level" {
  command = plan
  variables {
    log_level = "error"
  }
  expect_failures = [var.log_level]
}

run "rejects_unknown_gateway_gc_marking" {
  command = plan
  variables {
    gateway_gc_marking = "concurrent"
  }
  expect_failures = [var.gateway_gc_marking]
}

run "rejects_unknown_gateway_gc_threads" {
  command = plan
  variables {
    gateway_gc_threads = "concurrent"
  }
  expect_failures = [var.gateway_gc_threads]
}

run "accepts_gateway_connect_with_client_cidrs" {
  command = plan
  variables {
    gateway_connect_enabled      = true
    gateway_connect_client_cidrs = ["203.0.113.0/24", "198.51.100.7/32"]
    gateway_connect_instances    = 3
    gateway_connect_machine_type = "e2-medium"
    gateway_connect_subnet_cidr  = "10.8.4.0/24"
  }
}

run "rejects_gateway_connect_without_client_cidrs" {
  command = plan
  variables {
    gateway_connect_enabled = true
  }
  expect_failures = [var.gateway_connect_client_cidrs]
}

run "rejects_gateway_connect_open_to_the_world" {
  command = plan
  variables {
    gateway_connect_enabled      = true
    gateway_connect_client_cidrs = ["203.0.113.0/24", "0.0.0.0/0"]
  }
  expect_failures = [var.gateway_connect_client_cidrs]
}

run "rejects_gateway_connect_without_instances" {
  command = plan
  variables {
    gateway_connect_instances = 0
  }
  expect_failures = [var.gateway_connect_instances]
}

run "rejects_gateway_connect_subnet_too_small_for_a_rolling_update" {
  command = plan
  variables {
    gateway_connect_subnet_cidr = "10.8.2.0/28"
  }
  expect_failures = [var.gateway_connect_subnet_cidr]
}

run "rejects_a_no_upstream_alert_that_could_never_fire" {
  command = plan
  variables {
    gateway_no_upstream_alert_percent = 100
  }
  expect_failures = [var.gateway_no_upstream_alert_percent]
}

run "rejects_a_no_upstream_alert_on_any_answer" {
  command = plan
  variables {
    gateway_no_upstream_alert_percent = 0
  }
  expect_failures = [var.gateway_no_upstream_alert_percent]
}

run "rejects_a_negative_outcome_drop_percent" {
  command = plan
  variables {
    gateway_outcome_drop_alert_percent = -1
  }
  expect_failures = [var.gateway_outcome_drop_alert_percent]
}

run "rejects_a_suspect_fallback_percent_over_100" {
  command = plan
  variables {
    gateway_suspect_fallback_alert_percent = 150
  }
  expect_failures = [var.gateway_suspect_fallback_alert_percent]
}

run "rejects_an_iam_wait_not_in_seconds" {
  command = plan
  variables {
    iam_propagation_wait = "2m"
  }
  expect_failures = [var.iam_propagation_wait]
}

run "rejects_an_iam_wait_past_ten_minutes" {
  command = plan
  variables {
    iam_propagation_wait = "601s"
  }
  expect_failures = [var.iam_propagation_wait]
}

run "rejects_a_role_suffix_iam_cannot_take" {
  command = plan
  variables {
    custom_role_suffix = "-v2"
  }
  expect_failures = [var.custom_role_suffix]
}
