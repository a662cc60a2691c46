# The gateway's CONNECT listener, opt-in (gateway_connect_enabled): Cloud Run carries HTTP only, so the
# same gateway image runs here on Container-Optimized OS VMs — a regional managed instance group behind a
# regional external passthrough Network Load Balancer — for crawlers that want a real forward proxy
# (HTTPS_PROXY=http://user:pass@<address>:<port>). Off by default: every resource below has count 0 and
# the additions to network.tf and iam.tf are empty, so an existing deployment plans no change.
#
# The VMs have no external address: they live in their own subnet, which Cloud NAT serves, so they reach
# the proxies (and externally run proxies' allow lists) from the plane's static NAT addresses, exactly as
# the Cloud Run gateway does, and the proxy firewall admits them without anyone editing crawler_cidrs.
# The load balancer is a passthrough one: a crawler's packets reach the VMs with its own source address,
# which is what the client firewall below filters on.

locals {
  gateway_connect_enabled = var.gateway_connect_enabled

  # The boot script (docs/deploy.md): reads the gateway-clients secret with the VM's account into a
  # root-only env file — the value never enters the metadata — and starts the gateway image.
  gateway_connect_script = file("${path.module}/scripts/gateway-connect-startup.sh")

  # The CONNECT port is the one the script starts the container with (GATEWAY_PROXY_PORT=…): read from
  # the script itself, so the forwarding rule and the firewall cannot drift from what the VM listens on.
  gateway_connect_port = tonumber(regex("GATEWAY_PROXY_PORT=([0-9]+)", local.gateway_connect_script)[0])

  # The HTTP listener (/healthz, /readyz, /metrics, /v1/fetch): the script leaves PORT unset, so the
  # gateway's default (functions/gateway/src/config.ts); the script opens it in COS's host firewall.
  gateway_connect_http_port = 8080

  # Targeted by the two gateway firewall rules below; nothing else carries it.
  gateway_connect_tag = "proxyplane-gateway-connect"

  # Where Google's health checks come from: the passthrough load balancer's probes and the MIG's
  # autohealing probes (https://cloud.google.com/load-balancing/docs/health-check-concepts#ip-ranges).
  google_health_check_ranges = ["35.191.0.0/16", "130.211.0.0/22", "209.85.152.0/22", "209.85.204.0/22"]

  # Exactly the keys the startup script reads with `md instance/attributes/<key>`, plus the script
  # itself, COS's logging and monitoring agents, and the two that keep the project's SSH keys off these
  # internet-facing VMs (OS Login decides who may log in; the proxy VMs get the same two:
  # build-insert-request.ts HOST_ACCESS_METADATA). Names and URLs only: the client users stay in Secret
  # Manager (clients-secret is the secret's id, which the script reads with the VM's account).
  gateway_connect_metadata = {
    startup-script            = local.gateway_connect_script
    gateway-image             = local.images.gateway
    control-plane-url         = local.api_url
    region                    = var.region
    clients-secret            = local.secret_of_kind["gateway-clients"]
    log-level                 = var.log_level
    gc-marking                = var.gateway_gc_marking
    gc-threads                = var.gateway_gc_threads
    google-logging-enabled    = "true"
    google-monitoring-enabled = "true"
    block-project-ssh-keys    = "TRUE"
    enable-oslogin            = "TRUE"
  }

  # A regional MIG's rolling update may surge by 0 or by at least its number of zones
  # (update_policy.max_surge_fixed): the group gets at most this many of the region's zones, and surges
  # by this constant — never by a count of the zones that are UP at plan time, which a zone down for
  # maintenance would drop below the group's zone count (an update the API refuses).
  gateway_connect_max_zones = 3

  # The zones the group is created in. Read only at creation: the group ignores later changes to them
  # (distribution_policy_zones forces a new group, see its lifecycle below).
  gateway_connect_zones = local.gateway_connect_enabled ? slice(sort(data.google_compute_zones.gateway_connect[0].names), 0, min(local.gateway_connect_max_zones, length(data.google_compute_zones.gateway_connect[0].names))) : []
}

data "google_compute_zones" "gateway_connect" {
  count = local.gateway_connect_enabled ? 1 : 0

  region = var.region
  status = "UP"

  depends_on = [google_project_service.enabled]
}

# The VMs' own subnet, NATed (network.tf) and admitted by the proxy firewall (network.tf).
resource "google_compute_subnetwork" "gateway_connect" {
  count = local.gateway_connect_enabled ? 1 : 0

  name                     = "proxyplane-gateway-connect"
  region                   = var.region
  network                  = google_compute_network.plane.id
  ip_cidr_range            = var.gateway_connect_subnet_cidr
  private_ip_google_access = true
}

resource "google_compute_instance_template" "gateway_connect" {
  count = local.gateway_connect_enabled ? 1 : 0

  # A new template on every change (image_tag, machine type); the MIG rolls its VMs onto it.
  name_prefix  = "proxyplane-gateway-connect-"
  machine_type = var.gateway_connect_machine_type
  tags         = [local.gateway_connect_tag]
  metadata     = local.gateway_connect_metadata

  disk {
    source_image = "cos-cloud/cos-stable"
    disk_type    = "pd-balanced"
    disk_size_gb = 10
    boot         = true
    auto_delete  = true
  }

  # No access_config: no external address; egress through Cloud NAT's static addresses.
  network_interface {
    subnetwork = google_compute_subnetwork.gateway_connect[0].id
  }

  # The gateway's identity: the API accepts worker tokens of this account only (GATEWAY_SERVICE_ACCOUNT),
  # and it already reads gateway-clients, the proxies' credentials and the snapshot feed.
  service_account {
    email  = google_service_account.gateway.email
    scopes = ["cloud-platform"]
  }

  shielded_instance_config {
    enable_secure_boot          = true
    enable_vtpm                 = true
    enable_integrity_monitoring = true
  }

  lifecycle {
    create_before_destroy = true
  }
}

# Autohealing: recreate a VM whose gateway process stopped answering /healthz (always 200 while it runs).
resource "google_compute_region_health_check" "gateway_connect_alive" {
  count = local.gateway_connect_enabled ? 1 : 0

  name                = "proxyplane-gateway-connect-alive"
  region              = var.region
  check_interval_sec  = 10
  timeout_sec         = 5
  healthy_threshold   = 2
  unhealthy_threshold = 6

  http_health_check {
    port         = local.gateway_connect_http_port
    request_path = "/healthz"
  }

  depends_on = [google_project_service.enabled]
}

# Load balancing: new connections only to a VM taking traffic — /readyz is 200 while its snapshot is
# fresh (a VM with a stale or no snapshot would refuse the CONNECT anyway).
resource "google_compute_region_health_check" "gateway_connect_ready" {
  count = local.gateway_connect_enabled ? 1 : 0

  name                = "proxyplane-gateway-connect-ready"
  region              = var.region
  check_interval_sec  = 5
  timeout_sec         = 5
  healthy_threshold   = 2
  unhealthy_threshold = 2

  http_health_check {
    port         = local.gateway_connect_http_port
    request_path = "/readyz"
  }

  depends_on = [google_project_service.enabled]
}

resource "google_compute_region_instance_group_manager" "gateway_connect" {
  count = local.gateway_connect_enabled ? 1 : 0

  name                      = "proxyplane-gateway-connect"
  region                    = var.region
  base_instance_name        = "proxyplane-gw-connect"
  target_size               = var.gateway_connect_instances
  distribution_policy_zones = local.gateway_connect_zones
  wait_for_instances        = false

  version {
    instance_template = google_compute_instance_template.gateway_connect[0].self_link_unique
  }

  # The first boot pulls the image and registers with the API: give it five minutes before a failing
  # /healthz counts.
  auto_healing_policies {
    health_check      = google_compute_region_health_check.gateway_connect_alive[0].id
    initial_delay_sec = 300
  }

  # A new template (image_tag) replaces the VMs one surge at a time, never taking one away first.
  update_policy {
    type                  = "PROACTIVE"
    minimal_action        = "REPLACE"
    replacement_method    = "SUBSTITUTE"
    max_surge_fixed       = local.gateway_connect_max_zones
    max_unavailable_fixed = 0
  }

  # distribution_policy_zones forces a new group (the provider's ForceNew), and it comes from a data
  # source that is read again at every plan — deferred to apply, so unknown, whenever anything in
  # google_project_service.enabled has a pending change (its depends_on), and different whenever a zone
  # is not UP. Either would plan to destroy the group and every CONNECT VM, and the destroy fails anyway
  # while the backend service uses the group. The zones are fixed at creation.
  lifecycle {
    ignore_changes = [distribution_policy_zones]
  }

  depends_on = [
    google_compute_router_nat.egress,                                     # egress to the registry, the API, the proxies
    google_artifact_registry_repository_iam_member.gateway_connect_pulls, # docker pull as pp-gateway
    google_project_iam_member.component,                                  # logging, metrics, Pub/Sub
    google_secret_manager_secret_iam_member.reader,                       # the script reads gateway-clients
    google_cloud_run_v2_service.api,                                      # it registers at CONTROL_PLANE_URL
  ]
}

# The VMs pull the gateway image as pp-gateway (Cloud Run pulls with its own service agent).
resource "google_artifact_registry_repository_iam_member" "gateway_connect_pulls" {
  count = local.gateway_connect_enabled ? 1 : 0

  location   = google_artifact_registry_repository.images.location
  repository = google_artifact_registry_repository.images.name
  role       = "roles/artifactregistry.reader"
  member     = google_service_account.gateway.member
}

resource "google_compute_region_backend_service" "gateway_connect" {
  count = local.gateway_connect_enabled ? 1 : 0

  name                            = "proxyplane-gateway-connect"
  region                          = var.region
  load_balancing_scheme           = "EXTERNAL"
  protocol                        = "TCP"
  health_checks                   = [google_compute_region_health_check.gateway_connect_ready[0].id]
  connection_draining_timeout_sec = 30

  backend {
    group          = google_compute_region_instance_group_manager.gateway_connect[0].instance_group
    balancing_mode = "CONNECTION"
  }
}

# The crawlers' proxy address: stays across applies, VM replacements and image rollouts.
resource "google_compute_address" "gateway_connect" {
  count = local.gateway_connect_enabled ? 1 : 0

  name         = "proxyplane-gateway-connect"
  region       = var.region
  address_type = "EXTERNAL"

  depends_on = [google_project_service.enabled]
}

resource "google_compute_forwarding_rule" "gateway_connect" {
  count = local.gateway_connect_enabled ? 1 : 0

  name                  = "proxyplane-gateway-connect"
  region                = var.region
  load_balancing_scheme = "EXTERNAL"
  ip_protocol           = "TCP"
  ip_address            = google_compute_address.gateway_connect[0].address
  ports                 = [tostring(local.gateway_connect_port)]
  backend_service       = google_compute_region_backend_service.gateway_connect[0].id
}

# The CONNECT port, from the crawlers the operator names and nobody else (variables.tf refuses an empty
# list and any /0 when enabled). The gateway also checks its client users (Proxy-Authorization).
resource "google_compute_firewall" "gateway_connect_clients" {
  count = local.gateway_connect_enabled ? 1 : 0

  name        = "proxyplane-gateway-connect-clients"
  network     = google_compute_network.plane.id
  direction   = "INGRESS"
  priority    = 1000
  target_tags = [local.gateway_connect_tag]

  allow {
    protocol = "tcp"
    ports    = [tostring(local.gateway_connect_port)]
  }

  source_ranges = var.gateway_connect_client_cidrs
}

# The HTTP port, to Google's health checkers only (the load balancer forwards nothing to it).
resource "google_compute_firewall" "gateway_connect_health" {
  count = local.gateway_connect_enabled ? 1 : 0

  name        = "proxyplane-gateway-connect-health"
  network     = google_compute_network.plane.id
  direction   = "INGRESS"
  priority    = 1000
  target_tags = [local.gateway_connect_tag]

  allow {
    protocol = "tcp"
    ports    = [tostring(local.gateway_connect_http_port)]
  }

  source_ranges = local.google_health_check_ranges
}
