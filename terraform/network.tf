# The network the proxy VMs live in, the one firewall rule that opens them, and the static egress that
# lets that rule name the plane's own callers. Proxy VMs get ephemeral external IPs (their egress is the
# product); everything else is closed: a new VPC has no ingress rules but this one.

locals {
  # reconcile tags every proxy VM with this (NETWORK_TAG, shared/src/adapters/gce/labels.ts); the
  # firewall targets the tag.
  proxy_network_tag = "proxyplane-proxy"

  # Who may open the proxy port: the gateway (Cloud Run, and the CONNECT VMs of gateway_connect.tf when
  # enabled) and the probe — by their static NAT addresses, and by their subnet ranges in case the path
  # stays inside the VPC —, the crawlers' CIDRs, and — only when a variable says so — everyone.
  proxy_firewall_sources = concat(
    [for a in google_compute_address.nat : "${a.address}/32"],
    [google_compute_subnetwork.gateway_egress.ip_cidr_range, google_compute_subnetwork.probe_connector.ip_cidr_range],
    [for s in google_compute_subnetwork.gateway_connect : s.ip_cidr_range],
    var.crawler_cidrs,
    var.allow_open_proxy_firewall ? ["0.0.0.0/0"] : [],
  )
}

# Auto mode: a subnet in every region, because a proxy's spec.zone may be in any of them.
resource "google_compute_network" "plane" {
  name                    = "proxyplane"
  auto_create_subnetworks = true

  depends_on = [google_project_service.enabled]
}

# The gateway's Direct VPC egress (outside the auto-mode 10.128.0.0/9 ranges).
resource "google_compute_subnetwork" "gateway_egress" {
  name                     = "proxyplane-gateway-egress"
  region                   = var.region
  network                  = google_compute_network.plane.id
  ip_cidr_range            = var.egress_subnet_cidr
  private_ip_google_access = true
}

# Gen2 functions reach a VPC through a Serverless VPC Access connector; only the probe needs one.
resource "google_compute_subnetwork" "probe_connector" {
  name          = "proxyplane-probe-connector"
  region        = var.region
  network       = google_compute_network.plane.id
  ip_cidr_range = var.connector_cidr
}

resource "google_vpc_access_connector" "probe" {
  name          = "pp-probe"
  region        = var.region
  machine_type  = "e2-micro"
  min_instances = 2
  max_instances = 3

  subnet {
    name = google_compute_subnetwork.probe_connector.name
  }
}

resource "google_compute_address" "nat" {
  count = var.nat_ip_count

  name   = "proxyplane-nat-${count.index}"
  region = var.region

  depends_on = [google_project_service.enabled] # it names nothing else that waits for the Compute API
}

resource "google_compute_router" "egress" {
  name    = "proxyplane-egress"
  region  = var.region
  network = google_compute_network.plane.id
}

# Static egress for exactly the two subnets above, and the CONNECT gateway VMs' subnet when enabled
# (gateway_connect.tf: those VMs have no external address). Dynamic port allocation: a gateway instance
# opens many connections to the same few proxies, which would exhaust a fixed 64-port slice per instance.
resource "google_compute_router_nat" "egress" {
  name                                = "proxyplane-egress"
  router                              = google_compute_router.egress.name
  region                              = var.region
  nat_ip_allocate_option              = "MANUAL_ONLY"
  nat_ips                             = google_compute_address.nat[*].self_link
  source_subnetwork_ip_ranges_to_nat  = "LIST_OF_SUBNETWORKS"
  enable_endpoint_independent_mapping = false
  enable_dynamic_port_allocation      = true
  min_ports_per_vm                    = 64
  max_ports_per_vm                    = 16384

  subnetwork {
    name                    = google_compute_subnetwork.gateway_egress.id
    source_ip_ranges_to_nat = ["ALL_IP_RANGES"]
  }

  subnetwork {
    name                    = google_compute_subnetwork.probe_connector.id
    source_ip_ranges_to_nat = ["ALL_IP_RANGES"]
  }

  dynamic "subnetwork" {
    for_each = google_compute_subnetwork.gateway_connect
    content {
      name                    = subnetwork.value.id
      source_ip_ranges_to_nat = ["ALL_IP_RANGES"]
    }
  }

  log_config {
    enable = true
    filter = "ERRORS_ONLY" # port exhaustion shows up here (docs/operations.md)
  }
}

# The proxy port, and nothing else, on the proxy VMs.
resource "google_compute_firewall" "proxy_port" {
  name        = "proxyplane-proxy-port"
  network     = google_compute_network.plane.id
  direction   = "INGRESS"
  priority    = 1000
  target_tags = [local.proxy_network_tag]

  allow {
    protocol = "tcp"
    ports    = [tostring(var.proxy_port)]
  }

  source_ranges = local.proxy_firewall_sources
}
