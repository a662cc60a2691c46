# Every input of the deployment. project_id, image_tag and an admin credential (admin_emails, or an
# admin-tokens secret) are required; the rest have defaults that deploy a small, closed plane (no open
# proxy port, one warm gateway instance). docs/deploy.md gives the order: images and first secret
# versions exist before the full apply.

variable "project_id" {
  description = "Google Cloud project to deploy into (its ID, not its number or display name)."
  type        = string

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{4,28}[a-z0-9]$", var.project_id))
    error_message = "project_id must be a project ID: 6-30 characters, lowercase letters, digits and hyphens, starting with a letter."
  }
}

variable "region" {
  description = "Region of the functions, Cloud Run services, Scheduler jobs, Artifact Registry, NAT and egress subnets."
  type        = string
  default     = "us-central1"

  validation {
    condition     = can(regex("^[a-z]+-[a-z]+[0-9]+$", var.region))
    error_message = "region must be a Google Cloud region such as us-central1 or europe-west4."
  }
}

variable "firestore_location" {
  description = "Firestore location: a region (us-central1) or a multi-region (nam5, eur3). Null uses var.region. Cannot change after creation."
  type        = string
  default     = null

  validation {
    condition     = var.firestore_location == null || can(regex("^([a-z]+-[a-z]+[0-9]+|nam[0-9]+|eur[0-9]+)$", var.firestore_location))
    error_message = "firestore_location must be a region (us-central1) or a Firestore multi-region (nam5, eur3)."
  }
}

variable "firestore_deletion_protection" {
  description = "Keep the Firestore database on `terraform destroy` (deletion protection on, deletion policy ABANDON). Set false only for throwaway projects."
  type        = bool
  default     = true
}

variable "image_tag" {
  description = "Tag of the api and gateway images in the proxyplane Artifact Registry repository (built by terraform/images/cloudbuild.yaml)."
  type        = string

  validation {
    condition     = can(regex("^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$", var.image_tag))
    error_message = "image_tag must be a Docker tag: up to 128 of [A-Za-z0-9_.-], not starting with '.' or '-'."
  }
}

# The alerts (monitoring.tf) count log lines by their `event` field, and those lines are logged at info
# (gateway.snapshot_age), warn (provider.quota_exceeded, gc.deleted, passive.worker_suspect,
# gateway.route_failed_open, leases.store_unavailable, probe.pass_budget_spent,
# probe.credentials_unavailable) and error:
# a level above info would drop them, so the stale-gateway absence alert would fire and never clear and
# the others could never fire. Hence no warn or error here.
variable "log_level" {
  description = "LOG_LEVEL of every function and service: debug or info (warn and error would drop the log lines the alerts count)."
  type        = string
  default     = "info"

  validation {
    condition     = contains(["debug", "info"], var.log_level)
    error_message = "log_level must be debug or info: the log-based metrics count lines logged at info (gateway.snapshot_age, provider.request, probe.result) and warn (provider.quota_exceeded, gc.deleted, passive.worker_suspect, gateway.route_failed_open, leases.store_unavailable, probe.pass_budget_spent, probe.credentials_unavailable), which a higher level would drop — the stale-gateway alert would fire and never clear (docs/operations.md § The log contract)."
  }
}

variable "labels" {
  description = "Extra labels on every resource that takes labels (app=proxyplane is always added)."
  type        = map(string)
  default     = {}

  validation {
    condition = alltrue([
      for k, v in var.labels : can(regex("^[a-z][a-z0-9_-]{0,62}$", k)) && can(regex("^[a-z0-9_-]{0,63}$", v))
    ])
    error_message = "labels keys must match ^[a-z][a-z0-9_-]{0,62}$ and values ^[a-z0-9_-]{0,63}$."
  }

  # The labels the plane's own proxy VMs carry (shared/src/adapters/gce/labels.ts): gc deletes any VM
  # labelled managed-by=proxyplane that no proxy owns, so on the CONNECT gateway VMs they would get those
  # VMs reaped.
  validation {
    condition     = alltrue([for k in keys(var.labels) : k != "managed-by" && !startswith(k, "proxyplane-")])
    error_message = "labels must not use managed-by or proxyplane-* keys: they mark the VMs the plane owns, and gc deletes such a VM when no proxy owns it."
  }
}

variable "iam_propagation_wait" {
  description = "How long an apply waits after making the grants that Pub/Sub push deliveries and secret notifications need, before the resources that use them: IAM changes are in force everywhere typically after 2 minutes, potentially 7 or longer (a delivery refused meanwhile is retried 5 times over about two minutes — a gc tick over about eight —, then dead-lettered). Waited once, when the grants are made."
  type        = string
  default     = "120s"

  validation {
    condition     = can(regex("^([0-9]{1,2}|[1-5][0-9]{2}|600)s$", var.iam_propagation_wait))
    error_message = "iam_propagation_wait must be whole seconds such as \"120s\", at most \"600s\"."
  }
}

variable "custom_role_suffix" {
  description = "Appended to the four custom roles' IDs (proxyplaneInstanceReaper and the others). Empty by default; set it (e.g. \"V2\") to apply again in a project where the roles were destroyed 7 to 37 days ago, whose IDs IAM keeps reserved and cannot undelete."
  type        = string
  default     = ""

  validation {
    condition     = can(regex("^[A-Za-z0-9_.]{0,20}$", var.custom_role_suffix))
    error_message = "custom_role_suffix may hold up to 20 of [A-Za-z0-9_.] (custom role IDs allow those characters only)."
  }
}

variable "function_trigger" {
  description = "How Pub/Sub reaches the functions. \"pubsub-push\": Terraform's own push subscriptions carrying the table's ack deadline, backoff and dead-letter policy (recommended). \"eventarc\": gen2 event triggers (retry_policy from functions.json; Eventarc owns the subscription, so backoff is its fixed 10-600 s and nothing is dead-lettered)."
  type        = string
  default     = "pubsub-push"

  validation {
    condition     = contains(["pubsub-push", "eventarc"], var.function_trigger)
    error_message = "function_trigger must be \"pubsub-push\" or \"eventarc\"."
  }
}

variable "function_max_instances" {
  description = "Upper bound on instances per function (gc is always 1: a destructive sweep has a single writer)."
  type        = number
  default     = 20

  validation {
    condition     = var.function_max_instances >= 1 && var.function_max_instances <= 1000 && floor(var.function_max_instances) == var.function_max_instances
    error_message = "function_max_instances must be an integer from 1 to 1000."
  }
}

variable "function_cpu" {
  description = "vCPUs per instance of a function, by name (e.g. { probe = \"1\" }); a function left out gets Cloud Functions' share for its memory (512Mi: 0.333, 256Mi: 0.167). The probe is CPU-bound past a few thousand proxies at the default 30 s interval (docs/operations.md, A probe out of time)."
  type        = map(string)
  default     = {}

  validation {
    condition     = alltrue([for cpu in values(var.function_cpu) : contains(["0.167", "0.333", "0.583", "1", "2"], cpu)])
    error_message = "function_cpu values must be one of 0.167, 0.333, 0.583, 1, 2 (4 and more need 2 GiB of memory; a function name the table does not have is refused at plan: functions.tf)."
  }
}

variable "api_max_instances" {
  description = "Upper bound on API instances (leases and discovery scale out: state lives in Firestore)."
  type        = number
  default     = 10

  validation {
    condition     = var.api_max_instances >= 1 && var.api_max_instances <= 1000 && floor(var.api_max_instances) == var.api_max_instances
    error_message = "api_max_instances must be an integer from 1 to 1000."
  }
}

variable "api_rate_limits" {
  description = "Per-caller rate limit of each route class of the API, \"<per second>:<burst>\" per caller (a crawler token, an admin identity) per API instance, and (auth_failure) the failed authentications allowed per client address per API instance; an attribute left out keeps its default. The defaults and why they fit a fleet of hundreds of crawlers on one token, or behind one NAT: docs/api.md § Rate limits."
  type = object({
    lease_acquire = optional(string, "1000:2000")
    lease_other   = optional(string, "2000:4000")
    discovery     = optional(string, "50:1000")
    admin_write   = optional(string, "50:500")
    admin_read    = optional(string, "100:1000")
    auth_failure  = optional(string, "10:100")
  })
  default = {
    lease_acquire = "1000:2000"
    lease_other   = "2000:4000"
    discovery     = "50:1000"
    admin_write   = "50:500"
    admin_read    = "100:1000"
    auth_failure  = "10:100"
  }

  validation {
    condition = alltrue([
      for v in values(var.api_rate_limits) : try(
        can(regex("^[0-9]+(\\.[0-9]+)?:[0-9]+$", v)) &&
        tonumber(split(":", v)[0]) >= 0.001 && tonumber(split(":", v)[0]) <= 100000 &&
        tonumber(split(":", v)[1]) >= 1 && tonumber(split(":", v)[1]) <= 1000000,
        false
      )
    ])
    error_message = "each api_rate_limits value must be \"<per second>:<burst>\": a rate of 0.001-100000 requests a second and a whole burst of 1-1000000, such as \"1000:2000\"."
  }
}

variable "gateway_min_instances" {
  description = "Gateway instances kept warm. At least 1: a worker holds its snapshot and ownership epoch in memory, and a cold start would serve nothing until it registers again."
  type        = number
  default     = 1

  validation {
    condition     = var.gateway_min_instances >= 1 && floor(var.gateway_min_instances) == var.gateway_min_instances
    error_message = "gateway_min_instances must be an integer of at least 1."
  }
}

variable "gateway_max_instances" {
  description = "Upper bound on gateway instances (each registers as its own worker with its own snapshot subscription)."
  type        = number
  default     = 3

  validation {
    condition     = var.gateway_max_instances >= var.gateway_min_instances && var.gateway_max_instances <= 100 && floor(var.gateway_max_instances) == var.gateway_max_instances
    error_message = "gateway_max_instances must be an integer from gateway_min_instances to 100."
  }
}

variable "gateway_gc_marking" {
  description = "GATEWAY_GC_MARKING of the gateway: atomic (V8's incremental marking off: less CPU per byte and per request, one longer pause per full GC) or incremental (docs/gateway.md § Performance)."
  type        = string
  default     = "atomic"

  validation {
    condition     = contains(["atomic", "incremental"], var.gateway_gc_marking)
    error_message = "gateway_gc_marking must be atomic or incremental."
  }
}

variable "gateway_gc_threads" {
  description = "How V8 collects the gateway's garbage: single (node --single-threaded-gc: no GC helper threads competing with requests on the gateway's one vCPU; less CPU per request and per byte) or parallel (V8's default; docs/gateway.md § GC threads). The Cloud Run gateway and the CONNECT gateway VMs alike."
  type        = string
  default     = "single"

  validation {
    condition     = contains(["single", "parallel"], var.gateway_gc_threads)
    error_message = "gateway_gc_threads must be single or parallel."
  }
}

variable "proxy_port" {
  description = "TCP port the managed proxy VMs listen on; the only port the proxy firewall opens, and so the only spec.port the API accepts for a managed proxy (MANAGED_PROXY_PORTS; 400 port_not_allowed otherwise)."
  type        = number
  default     = 3128

  validation {
    condition     = var.proxy_port >= 1024 && var.proxy_port <= 65535 && floor(var.proxy_port) == var.proxy_port
    error_message = "proxy_port must be an unprivileged TCP port (1024-65535)."
  }
}

variable "drift_poll_seconds" {
  description = "DriftPoll: how often the requeue sweep re-reconciles each steady managed proxy to catch out-of-band instance changes (stopped, deleted, preempted) — RECONCILE_DRIFT_POLL_MS of reconcile and requeue. A backstop: a proxy failing its health checks is reconciled at once. docs/cost.md prices the default; each halving doubles the steady fleet's reconcile invocations and reads."
  type        = number
  default     = 300

  validation {
    condition     = var.drift_poll_seconds >= 60 && var.drift_poll_seconds <= 3600 && floor(var.drift_poll_seconds) == var.drift_poll_seconds
    error_message = "drift_poll_seconds must be an integer from 60 to 3600."
  }
}

variable "reconcile_max_replacing" {
  description = "RECONCILE_MAX_REPLACING of reconcile: at most this many managed proxies are replaced at once, fleet-wide, for a change their old VM can wait out (a machine type, image, connectPorts or new default cloud-init edit rolls through the fleet this many at a time, the others serving on their old VM, reason ReplacementQueued). A credentials rotation rolls the same way while the old version stays readable (the waiting VMs serve it, status.servedCredentials); a revoked (disabled or destroyed) version, a port edit or a custom cloud-init is replaced at once. 0 = unlimited. docs/gc-and-rotation.md § Rolling replacement."
  type        = number
  default     = 5

  validation {
    condition     = var.reconcile_max_replacing >= 0 && var.reconcile_max_replacing <= 1000 && floor(var.reconcile_max_replacing) == var.reconcile_max_replacing
    error_message = "reconcile_max_replacing must be an integer from 0 (unlimited) to 1000."
  }
}

variable "crawler_cidrs" {
  description = "CIDR ranges of the crawlers that use leased proxies directly (not through the gateway). The gateway's and probes' NAT addresses are always admitted."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for c in var.crawler_cidrs : can(cidrhost(c, 0))])
    error_message = "crawler_cidrs must be CIDR ranges such as 203.0.113.0/24."
  }
  validation {
    condition     = alltrue([for c in var.crawler_cidrs : !endswith(c, "/0")])
    error_message = "crawler_cidrs must not contain a /0 range; set allow_open_proxy_firewall = true if the proxies really must be open to the internet."
  }
}

variable "allow_open_proxy_firewall" {
  description = "Open the proxy port to 0.0.0.0/0. Off by default: an open forward proxy is abused within hours. Prefer crawler_cidrs."
  type        = bool
  default     = false
}

variable "nat_ip_count" {
  description = "Static egress addresses of the gateway and the probe function (Cloud NAT). Give crawler-side allow lists these; add more if NAT ports run out."
  type        = number
  default     = 1

  validation {
    condition     = var.nat_ip_count >= 1 && var.nat_ip_count <= 16 && floor(var.nat_ip_count) == var.nat_ip_count
    error_message = "nat_ip_count must be an integer from 1 to 16."
  }
}

variable "egress_subnet_cidr" {
  description = "Subnet for the gateway's Direct VPC egress: at least /26, and 4 addresses per gateway_max_instances (Cloud Run takes two per instance, and a deploy holds the old revision's for up to 20 minutes while the new one's come up)."
  type        = string
  default     = "10.8.0.0/26"

  validation {
    condition     = can(cidrhost(var.egress_subnet_cidr, 0)) && try(tonumber(split("/", var.egress_subnet_cidr)[1]) <= 26, false)
    error_message = "egress_subnet_cidr must be a CIDR range of /26 or larger."
  }
  validation {
    # Both ends: the four blocks are aligned, so a range whose first and last addresses are private lies
    # inside one (the first alone let 10.0.0.0/7 through, which reaches 11.255.255.255).
    condition     = try(can(regex("^(10\\.|172\\.(1[6-9]|2[0-9]|3[01])\\.|192\\.168\\.|100\\.(6[4-9]|[7-9][0-9]|1[01][0-9]|12[0-7])\\.)", cidrhost(var.egress_subnet_cidr, 0))) && can(regex("^(10\\.|172\\.(1[6-9]|2[0-9]|3[01])\\.|192\\.168\\.|100\\.(6[4-9]|[7-9][0-9]|1[01][0-9]|12[0-7])\\.)", cidrhost(var.egress_subnet_cidr, -1))), false)
    error_message = "egress_subnet_cidr must be a private range (inside 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16 or 100.64.0.0/10): the proxy firewall admits it, and a public range would open every proxy's port to it."
  }

  # A subnet out of addresses stops new gateway instances at scale-out, long after the apply: refuse it here.
  # Usable = the range less the 4 addresses GCP reserves in every subnet.
  validation {
    condition     = try(pow(2, 32 - tonumber(split("/", var.egress_subnet_cidr)[1])) - 4 >= 4 * var.gateway_max_instances, true)
    error_message = "egress_subnet_cidr is too small for gateway_max_instances: it needs 4 usable addresses per instance (a /26 serves up to 15, a /25 up to 31, a /24 up to 63, a /23 up to 127)."
  }
}

variable "connector_cidr" {
  description = "Dedicated /28 for the Serverless VPC Access connector that the probe function egresses through."
  type        = string
  default     = "10.8.1.0/28"

  validation {
    condition     = can(cidrhost(var.connector_cidr, 0)) && endswith(var.connector_cidr, "/28")
    error_message = "connector_cidr must be a /28 range (a Serverless VPC Access requirement)."
  }
  validation {
    # Both ends: the four blocks are aligned, so a range whose first and last addresses are private lies
    # inside one (the first alone let 10.0.0.0/7 through, which reaches 11.255.255.255).
    condition     = try(can(regex("^(10\\.|172\\.(1[6-9]|2[0-9]|3[01])\\.|192\\.168\\.|100\\.(6[4-9]|[7-9][0-9]|1[01][0-9]|12[0-7])\\.)", cidrhost(var.connector_cidr, 0))) && can(regex("^(10\\.|172\\.(1[6-9]|2[0-9]|3[01])\\.|192\\.168\\.|100\\.(6[4-9]|[7-9][0-9]|1[01][0-9]|12[0-7])\\.)", cidrhost(var.connector_cidr, -1))), false)
    error_message = "connector_cidr must be a private range (inside 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16 or 100.64.0.0/10): the proxy firewall admits it, and a public range would open every proxy's port to it."
  }
}

variable "secrets" {
  description = "Secret Manager secrets the plane uses, by secret id. Kinds: \"discovery-tokens\" (exactly one): the crawlers' bearer tokens for discovery and leases, \"name:token,name2:token2\" (DISCOVERY_TOKENS of the API); \"admin-tokens\" (at most one): static admin tokens, \"name:token,…\" (ADMIN_TOKENS, break-glass beside admin_emails); \"gateway-clients\" (exactly one): the gateway's client users, \"user:pass,…\" (GATEWAY_CLIENT_USERS); \"proxy-credentials\": a proxy's user:password (read by the API, the gateway, the probe and the proxy VMs); \"cloud-init\": a VM bootstrap script (read by reconcile). Each gets a rotation notification on the secret-events topic. Versions are added out of band (gcloud secrets versions add), never through Terraform."
  type = map(object({
    kind        = string
    description = optional(string, "")
  }))
  default = {
    proxyplane-discovery-tokens = { kind = "discovery-tokens", description = "crawler bearer tokens: name:token,name2:token2" }
    gateway-clients             = { kind = "gateway-clients", description = "users of the gateway's /v1/fetch: user:pass,user2:pass2" }
  }

  validation {
    condition     = alltrue([for id, s in var.secrets : can(regex("^[A-Za-z0-9_-]{1,255}$", id))])
    error_message = "secret ids must be 1-255 of [A-Za-z0-9_-]."
  }
  validation {
    condition     = alltrue([for s in var.secrets : contains(["discovery-tokens", "admin-tokens", "gateway-clients", "proxy-credentials", "cloud-init"], s.kind)])
    error_message = "secret kind must be one of discovery-tokens, admin-tokens, gateway-clients, proxy-credentials, cloud-init."
  }
  validation {
    condition     = length([for s in var.secrets : s if s.kind == "discovery-tokens"]) == 1
    error_message = "exactly one secret must be of kind \"discovery-tokens\": the API refuses to start without crawler tokens."
  }
  validation {
    condition     = length([for s in var.secrets : s if s.kind == "gateway-clients"]) == 1
    error_message = "exactly one secret must be of kind \"gateway-clients\": the gateway refuses to start without client users (GATEWAY_CLIENT_USERS)."
  }
  validation {
    condition     = length([for s in var.secrets : s if s.kind == "admin-tokens"]) <= 1
    error_message = "at most one secret may be of kind \"admin-tokens\"."
  }
}

variable "admin_emails" {
  description = "Google identities (users or service accounts, by e-mail) allowed to call the admin API: create, change and delete proxies. The API checks their identity tokens (ADMIN_EMAILS), accepting tokens for its own URL and those `gcloud auth print-identity-token` mints."
  type        = list(string)
  default     = []

  validation {
    condition     = length(var.admin_emails) > 0 || length([for s in var.secrets : s if s.kind == "admin-tokens"]) > 0
    error_message = "give admin_emails, or an \"admin-tokens\" secret: the API refuses to start with no admin credential."
  }
  # The API's own rule (functions/api/src/auth/principals.ts): a dot in the domain, no ':' or ',' in the
  # address, and only user: or serviceAccount: before it — a group: entry cannot be checked from an ID
  # token and is ignored, so as the only admin the API refused to start after the apply.
  validation {
    condition     = alltrue([for e in var.admin_emails : can(regex("^((user|serviceAccount):)?[^@\\s:,]+@[^@\\s:,]+\\.[^@\\s:,]+$", e))])
    error_message = "admin_emails must be e-mail addresses such as ops@example.com or deployer@my-project.iam.gserviceaccount.com (optionally user: or serviceAccount: before them; groups cannot be checked from an ID token: list their members)."
  }
}

variable "crawler_principals" {
  description = "IAM principals of crawlers allowed to call the gateway's fetch endpoint (Cloud Run invoker), e.g. \"serviceAccount:crawler@p.iam.gserviceaccount.com\". Leases are authorised by the discovery-tokens secret instead."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for p in var.crawler_principals : can(regex("^(user|group|serviceAccount|domain):[^\\s]+$", p))])
    error_message = "crawler_principals entries must look like user:a@b.c, group:…, serviceAccount:… or domain:…."
  }
}

variable "alert_emails" {
  description = "Addresses that receive the alert policies' notifications. Empty: the policies exist and show in the console, but notify nobody."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for e in var.alert_emails : can(regex("^[^@\\s]+@[^@\\s]+\\.[^@\\s]+$", e))])
    error_message = "alert_emails must be e-mail addresses."
  }
}

variable "max_snapshot_age_seconds" {
  description = "Alert when a gateway worker's snapshot is older than this. It must fire before the worker stops taking traffic at the control plane's maxStaleAge (WORKER_MAX_STALE_AGE_SECONDS, 150 s): the alert sees an age at most one 30 s report later, plus log ingestion, so at most 90. A healthy worker's snapshot is renewed by the once-a-minute snapshot-tick, so it ages to about 60 s: hence over 60. And it must be a bucket bound of the age metric (monitoring.tf), which leaves 75 or 90."
  type        = number
  default     = 90

  validation {
    condition     = contains([75, 90], var.max_snapshot_age_seconds)
    error_message = "max_snapshot_age_seconds must be 75 or 90: over 60 (a healthy snapshot ages to about a minute between ticks), at most 90 (the alert must fire before a worker stops taking traffic at 150 s), and a bucket bound of the snapshot-age metric (monitoring.tf: the alert's percentile is interpolated inside a bucket)."
  }
}

variable "tick_failures_alert_threshold" {
  description = "Alert when one Scheduler job logs more than this many failed runs (job.tick_failed; a redelivered probe tick counts each attempt): in 15 minutes for probe-tick, requeue-sweep and snapshot-tick, which tick every minute, and in an hour for gc-sweep, which ticks every 10 minutes. So the default fires on a job that is down, not on a blip. At most 5: an hour holds six gc-sweep runs."
  type        = number
  default     = 3

  validation {
    condition     = var.tick_failures_alert_threshold >= 0 && var.tick_failures_alert_threshold <= 5 && floor(var.tick_failures_alert_threshold) == var.tick_failures_alert_threshold
    error_message = "tick_failures_alert_threshold must be an integer from 0 to 5 (an hour holds six gc-sweep runs: a higher one never fires for it)."
  }
}

variable "gc_deletions_alert_threshold" {
  description = "Alert when the orphan GC deletes more than this many instances in an hour (it only ever closes crash gaps; many deletions mean something is creating stray VMs)."
  type        = number
  default     = 5

  validation {
    condition     = var.gc_deletions_alert_threshold >= 0 && floor(var.gc_deletions_alert_threshold) == var.gc_deletions_alert_threshold
    error_message = "gc_deletions_alert_threshold must be a non-negative integer."
  }
}

# The gateway traffic alerts (monitoring.tf) compare shares of a worker's requests, from its gateway.traffic
# lines, over trailing 5-minute windows; each fires only when the share stays above its threshold for the
# condition's duration (10 or 15 minutes), so a burst, or one unlucky request of an idle worker, does not page.
variable "gateway_no_upstream_alert_percent" {
  description = "Alert when more than this percentage of a gateway worker's requests is answered 503 no_upstream (the route has no usable proxy on that worker: none owned, or all at capacity) through 10 minutes. Crawlers retry a 503, so a few percent is survivable; a tenth of the traffic failing for 10 minutes is a route sized below the gateway fleet or the load (docs/operations.md § A gateway answering no_upstream)."
  type        = number
  default     = 10

  validation {
    condition     = var.gateway_no_upstream_alert_percent > 0 && var.gateway_no_upstream_alert_percent < 100
    error_message = "gateway_no_upstream_alert_percent must be a percentage above 0 and below 100 (at 100 it could never fire)."
  }
}

variable "gateway_outcome_drop_alert_percent" {
  description = "Alert when a gateway worker's outcome queue drops more samples than this percentage of its requests through 10 minutes. Any drop means the queue (GATEWAY_OUTCOME_QUEUE_SIZE, 10,000) is full: the reporter cannot send outcomes as fast as they come, and the control plane's passive health judges the worker's proxies on what it still gets. 1 % ignores the last percent of a saturated worker; 0 pages on any sustained drop."
  type        = number
  default     = 1

  validation {
    condition     = var.gateway_outcome_drop_alert_percent >= 0 && var.gateway_outcome_drop_alert_percent < 100
    error_message = "gateway_outcome_drop_alert_percent must be a percentage from 0 (any sustained drop) to below 100."
  }
}

variable "gateway_suspect_fallback_alert_percent" {
  description = "Alert when more than this percentage of a gateway worker's requests goes to a SUSPECT proxy, for want of a usable sound one in its route, through 15 minutes. A few during a burst are the fail-open doing its job; a twentieth of the traffic for a quarter of an hour means routes run short of sound proxies."
  type        = number
  default     = 5

  validation {
    condition     = var.gateway_suspect_fallback_alert_percent > 0 && var.gateway_suspect_fallback_alert_percent < 100
    error_message = "gateway_suspect_fallback_alert_percent must be a percentage above 0 and below 100."
  }
}

variable "probe_loop_seconds" {
  description = "How long each probe invocation keeps probing after its Scheduler tick (PROBE_LOOP_SECONDS), so that health-check intervals under a minute mean something; 0 = one pass per tick. Bounded by the probe's run budget (110 s, 10 s inside its timeout in functions.json): a pass that starts at the loop's end is given at least 5 s."
  type        = number
  default     = 50

  validation {
    condition     = var.probe_loop_seconds >= 0 && var.probe_loop_seconds <= 105
    error_message = "probe_loop_seconds must be from 0 to 105 (a pass starting at the loop's end gets at least 5 s, and the probe's run budget is 110 s, 10 s inside its 120 s timeout)."
  }
}

variable "probe_echo_url" {
  description = "The echo the probe's EGRESS tier fetches through each proxy (PROBE_ECHO_URL). Null (the default): the API's own /v1/echo, which is https (Cloud Run redirects http to https), so EGRESS checks the exit address only — through a CONNECT tunnel with TLS inside no proxy can add X-Forwarded-For, Forwarded or Via. To check for those leaks too, name a plain-http echo of your own, reachable from every proxy and from the probe: it must answer GET with 200 and the JSON body {\"ip\": \"<the address the request came from>\", \"headers\": {\"<name>\": \"<value>\", …}} — every header as the request arrived — as the API's /v1/echo does (docs/health.md § EGRESS through an http echo)."
  type        = string
  default     = null

  # As the probe's own parse (WHATWG URL, functions/probe/src/config.ts) reads it, so that a plan passes
  # only what the probe starts with: a host name or an address, no credentials, a port up to 65535.
  validation {
    condition     = var.probe_echo_url == null || can(regex("^https?://(\\[[0-9A-Fa-f:.]+\\]|[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?)(:[0-9]{1,5})?([/?#]\\S*)?$", var.probe_echo_url))
    error_message = "probe_echo_url must be an absolute http:// or https:// URL naming a host (no credentials), such as http://echo.example.net/v1/echo."
  }
  validation {
    condition     = var.probe_echo_url == null || try(tonumber(regex("^https?://[^/?#]*:([0-9]+)(?:[/?#]|$)", var.probe_echo_url)[0]) <= 65535, true)
    error_message = "probe_echo_url's port must be 65535 or below."
  }
  # A managed proxy's squid forwards plain http to its Safe_ports only (80, 443, 1025-65535;
  # shared/src/domain/cloud-init/squid-conf.ts): an echo elsewhere gets squid's 403 through every managed
  # proxy while answering the prober directly, so EGRESS fails them all and the fleet turns Unhealthy.
  validation {
    condition     = var.probe_echo_url == null || try(contains([80, 443], tonumber(regex("^http://[^/?#]*:([0-9]+)(?:[/?#]|$)", var.probe_echo_url)[0])) || tonumber(regex("^http://[^/?#]*:([0-9]+)(?:[/?#]|$)", var.probe_echo_url)[0]) >= 1025, true)
    error_message = "probe_echo_url's http port must be 80, 443 or 1025-65535: a managed proxy's squid refuses plain http to any other port (its Safe_ports), and every managed proxy would fail EGRESS."
  }
  validation {
    condition     = var.probe_echo_url == null || try(alltrue(concat([length(split(".", regex("^https?://([0-9.]+)(?::[0-9]+)?(?:[/?#]|$)", var.probe_echo_url)[0])) <= 4], [for o in split(".", regex("^https?://([0-9.]+)(?::[0-9]+)?(?:[/?#]|$)", var.probe_echo_url)[0]) : can(regex("^(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])$", o))])), true)
    error_message = "probe_echo_url's IPv4 address must be at most four numbers, each from 0 to 255 with no leading zeros."
  }
}

# The gateway's CONNECT listener on VMs behind a TCP load balancer (gateway_connect.tf, docs/deploy.md
# § Where the gateway's CONNECT listener runs). Off by default: nothing of it exists until enabled.
variable "gateway_connect_enabled" {
  description = "Run the gateway's CONNECT listener (HTTPS_PROXY=http://user:pass@<address>:<port>) on Container-Optimized OS VMs — a regional managed instance group of gateway_connect_instances, as pp-gateway — behind a regional external passthrough Network Load Balancer with a static address (output gateway_connect_proxy). Needs gateway_connect_client_cidrs. Off by default: Cloud Run's gateway serves /v1/fetch only."
  type        = bool
  default     = false
}

variable "gateway_connect_client_cidrs" {
  description = "CIDR ranges of the crawlers allowed to reach the CONNECT listener's port (the firewall's only sources for it; the load balancer passes the crawlers' own addresses through). Required, non-empty, when gateway_connect_enabled; never a /0 — the listener checks client users, but an internet-wide proxy port invites credential guessing and floods."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for c in var.gateway_connect_client_cidrs : can(cidrhost(c, 0))])
    error_message = "gateway_connect_client_cidrs must be CIDR ranges such as 203.0.113.0/24."
  }
  validation {
    condition     = alltrue([for c in var.gateway_connect_client_cidrs : !endswith(c, "/0")])
    error_message = "gateway_connect_client_cidrs must not contain a /0 range: name the crawlers' ranges."
  }
  validation {
    condition     = !var.gateway_connect_enabled || length(var.gateway_connect_client_cidrs) > 0
    error_message = "gateway_connect_enabled needs gateway_connect_client_cidrs: without them the CONNECT port would be open to nobody."
  }
}

variable "gateway_connect_instances" {
  description = "Gateway VMs in the CONNECT listener's regional managed instance group (spread over up to three zones; each registers as its own worker)."
  type        = number
  default     = 2

  validation {
    condition     = var.gateway_connect_instances >= 1 && var.gateway_connect_instances <= 10 && floor(var.gateway_connect_instances) == var.gateway_connect_instances
    error_message = "gateway_connect_instances must be an integer from 1 to 10."
  }
}

variable "gateway_connect_machine_type" {
  description = "Machine type of the CONNECT gateway VMs. e2-small (0.5 vCPU sustained) is what docs/cost.md prices; e2-medium or e2-standard-2 for more CONNECT throughput per VM."
  type        = string
  default     = "e2-small"

  validation {
    condition     = can(regex("^[a-z][a-z0-9]*-[a-z0-9-]+$", var.gateway_connect_machine_type))
    error_message = "gateway_connect_machine_type must be a Compute Engine machine type such as e2-small or n2-standard-2."
  }
}

variable "gateway_connect_subnet_cidr" {
  description = "Subnet of the CONNECT gateway VMs (no external addresses: Cloud NAT serves it, and the proxy firewall admits it). At least /27 (ten VMs and a rolling update's surge of three); outside egress_subnet_cidr, connector_cidr and the auto-mode 10.128.0.0/9."
  type        = string
  default     = "10.8.2.0/27"

  validation {
    condition     = can(cidrhost(var.gateway_connect_subnet_cidr, 0)) && try(tonumber(split("/", var.gateway_connect_subnet_cidr)[1]) <= 27, false)
    error_message = "gateway_connect_subnet_cidr must be a CIDR range of /27 or larger (up to ten VMs plus a rolling update's surge)."
  }
  validation {
    # Both ends: the four blocks are aligned, so a range whose first and last addresses are private lies
    # inside one (the first alone let 10.0.0.0/7 through, which reaches 11.255.255.255).
    condition     = try(can(regex("^(10\\.|172\\.(1[6-9]|2[0-9]|3[01])\\.|192\\.168\\.|100\\.(6[4-9]|[7-9][0-9]|1[01][0-9]|12[0-7])\\.)", cidrhost(var.gateway_connect_subnet_cidr, 0))) && can(regex("^(10\\.|172\\.(1[6-9]|2[0-9]|3[01])\\.|192\\.168\\.|100\\.(6[4-9]|[7-9][0-9]|1[01][0-9]|12[0-7])\\.)", cidrhost(var.gateway_connect_subnet_cidr, -1))), false)
    error_message = "gateway_connect_subnet_cidr must be a private range (inside 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16 or 100.64.0.0/10): the proxy firewall admits it, and a public range would open every proxy's port to it."
  }
}
