# Every input of the deployment. Only project_id is required; the rest have defaults that deploy a small,
# closed plane (no open proxy port, one warm gateway instance).

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

variable "log_level" {
  description = "LOG_LEVEL of every function and service."
  type        = string
  default     = "info"

  validation {
    condition     = contains(["debug", "info", "warn", "error"], var.log_level)
    error_message = "log_level must be one of debug, info, warn, error."
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

variable "api_max_instances" {
  description = "Upper bound on API instances (leases and discovery scale out: state lives in Firestore)."
  type        = number
  default     = 10

  validation {
    condition     = var.api_max_instances >= 1 && var.api_max_instances <= 1000 && floor(var.api_max_instances) == var.api_max_instances
    error_message = "api_max_instances must be an integer from 1 to 1000."
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

variable "proxy_port" {
  description = "TCP port the managed proxy VMs listen on; the only port the proxy firewall opens. Proxies created with another spec.port are unreachable."
  type        = number
  default     = 3128

  validation {
    condition     = var.proxy_port >= 1024 && var.proxy_port <= 65535 && floor(var.proxy_port) == var.proxy_port
    error_message = "proxy_port must be an unprivileged TCP port (1024-65535)."
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
  description = "Subnet for the gateway's Direct VPC egress (at least /26: Cloud Run takes about two addresses per instance)."
  type        = string
  default     = "10.8.0.0/26"

  validation {
    condition     = can(cidrhost(var.egress_subnet_cidr, 0)) && try(tonumber(split("/", var.egress_subnet_cidr)[1]) <= 26, false)
    error_message = "egress_subnet_cidr must be a CIDR range of /26 or larger."
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
}

variable "secrets" {
  description = "Secret Manager secrets the plane uses, by secret id. kind \"proxy-credentials\": a proxy's user:password (read by the API, the gateway, the probe and the proxy VMs); kind \"cloud-init\": a VM bootstrap script (read by reconcile). Each gets a rotation notification on the secret-events topic. Versions are added out of band (gcloud secrets versions add), never through Terraform."
  type = map(object({
    kind        = string
    description = optional(string, "")
  }))
  default = {}

  validation {
    condition     = alltrue([for id, s in var.secrets : can(regex("^[A-Za-z0-9_-]{1,255}$", id))])
    error_message = "secret ids must be 1-255 of [A-Za-z0-9_-]."
  }
  validation {
    condition     = alltrue([for s in var.secrets : contains(["proxy-credentials", "cloud-init"], s.kind)])
    error_message = "secret kind must be \"proxy-credentials\" or \"cloud-init\"."
  }
}

variable "admin_principals" {
  description = "IAM principals allowed to call the admin API (create and delete proxies), e.g. \"user:ops@example.com\". Passed to the API, which checks the caller's Google identity token."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for p in var.admin_principals : can(regex("^(user|group|serviceAccount|domain):[^\\s]+$", p))])
    error_message = "admin_principals entries must look like user:a@b.c, group:…, serviceAccount:… or domain:…."
  }
}

variable "crawler_principals" {
  description = "IAM principals of crawlers: they may lease proxies from the API and call the gateway (Cloud Run invoker)."
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
  description = "Alert when a gateway worker's snapshot is older than this (the control plane's maxStaleAge is the hard limit at which the worker stops taking traffic)."
  type        = number
  default     = 180

  validation {
    condition     = var.max_snapshot_age_seconds >= 30 && var.max_snapshot_age_seconds <= 3600
    error_message = "max_snapshot_age_seconds must be from 30 to 3600."
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
