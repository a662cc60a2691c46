# One service account per component, each with the least it needs. No primitive role (owner, editor,
# viewer) anywhere; where no predefined role is narrow enough, a custom role lists the permissions.
# Firestore has no per-collection IAM, so every component that touches it gets roles/datastore.user;
# the gateway never touches Firestore (its hot path reads only its in-memory snapshot).

resource "google_service_account" "function" {
  for_each = module.tables.functions

  account_id   = "pp-fn-${each.key}"
  display_name = "proxyplane function ${each.key}"

  depends_on = [google_project_service.enabled]
}

resource "google_service_account" "api" {
  account_id   = "pp-api"
  display_name = "proxyplane API (Cloud Run)"

  depends_on = [google_project_service.enabled]
}

# Also the gateway workers' identity: the API accepts worker calls only with this account's ID token.
resource "google_service_account" "gateway" {
  account_id   = "pp-gateway"
  display_name = "proxyplane gateway worker (Cloud Run)"

  depends_on = [google_project_service.enabled]
}

# Attached to every managed proxy VM. It gets no project role at all: only secretAccessor on the
# proxy-credentials secrets (secrets.tf), which the VM reads at boot to configure its proxy.
resource "google_service_account" "proxy_vm" {
  account_id   = "pp-proxy-vm"
  display_name = "proxyplane proxy VMs"

  depends_on = [google_project_service.enabled]
}

# The identity Pub/Sub push (or Eventarc) presents to the functions; it may only invoke them.
resource "google_service_account" "pubsub_push" {
  account_id   = "pp-pubsub-push"
  display_name = "proxyplane Pub/Sub push to functions"

  depends_on = [google_project_service.enabled]
}

# Cloud Build runs the gen2 function builds, and the api/gateway image builds (terraform/images), as this
# account instead of the default compute account.
resource "google_service_account" "builder" {
  account_id   = "pp-builder"
  display_name = "proxyplane function builds"

  depends_on = [google_project_service.enabled]
}

resource "google_project_iam_custom_role" "instance_reaper" {
  role_id     = "proxyplaneInstanceReaper${var.custom_role_suffix}"
  title       = "proxyplane orphan GC"
  description = "List and delete the instances the orphan GC finds; it never creates anything."
  # compute.disks.delete: a proxy VM's boot disk is created autoDelete (build-insert-request.ts), and
  # Compute deletes it with the instance; the GC's delete must be allowed to take it along (what
  # roles/compute.instanceAdmin.v1, reconcile's role, grants for the same delete).
  permissions = ["compute.instances.list", "compute.instances.get", "compute.instances.delete", "compute.disks.delete"]

  depends_on = [google_project_service.enabled]
}

# The API creates each gateway worker's filtered pull subscription on gateway-snapshots (the snapshot
# function deletes it, below; Pub/Sub after a day unused). Creating a subscription needs pubsub.subscriptions.create
# on the project — there is no narrower scope for a subscription that does not exist yet — plus
# attachSubscription on the topic (the topic-level roles/pubsub.subscriber in topic_subscribers below). This role is the project-level
# half, with exactly the calls the registration makes (shared/src/adapters/pubsub/snapshot-subscriptions.ts:
# create, and on ALREADY_EXISTS read the filter) — a project-wide grant, so no delete, update or list:
# with those the public-facing API's account could delete or re-point every push subscription that feeds
# the functions.
resource "google_project_iam_custom_role" "worker_subscriptions" {
  role_id     = "proxyplaneWorkerSubscriptions${var.custom_role_suffix}"
  title       = "proxyplane worker subscriptions"
  description = "Create gateway workers' snapshot subscriptions and read an existing one's filter."
  permissions = [
    "pubsub.subscriptions.create",
    "pubsub.subscriptions.get",
  ]

  depends_on = [google_project_service.enabled]
}

# The snapshot function deletes a gateway worker's subscription once the worker's session ended more than
# the view horizon ago (functions/snapshot/src/subscription-retention.ts): every subscription on
# gateway-snapshots is billed for every message published to the topic, those its filter drops included,
# and Pub/Sub's own expiry waits a day. Deleting needs pubsub.subscriptions.delete on the subscription, whose
# name is made at run time: a project-wide grant (IAM Conditions cannot narrow it to those names: Pub/Sub
# offers no resource attributes to them). No predefined role holds it without create, update and the
# topics' admin (roles/pubsub.editor); this one holds the delete alone. The function's code names only
# worker subscriptions (shared/src/adapters/pubsub/subscription-reaper.ts), and it is no public endpoint.
resource "google_project_iam_custom_role" "worker_subscription_reaper" {
  role_id     = "proxyplaneWorkerSubscriptionReaper${var.custom_role_suffix}"
  title       = "proxyplane worker subscription reaper"
  description = "Delete the snapshot subscriptions of gateway workers gone past the view horizon."
  permissions = ["pubsub.subscriptions.delete"]

  depends_on = [google_project_service.enabled]
}

# The API's /v1/jobs (docs/operations-jobs.md) reads, runs, pauses and resumes the schedule table's jobs
# (shared/src/adapters/scheduler: SCHEDULER_PERMISSIONS; resume is cloudscheduler.jobs.enable).
# roles/cloudscheduler.jobRunner can neither read nor pause; roles/cloudscheduler.admin could also create,
# change and delete jobs, and a job it creates may publish to any topic. Cloud Scheduler has no per-job
# IAM, so the grant is project-wide; the API only ever names the table's jobs.
resource "google_project_iam_custom_role" "job_operator" {
  role_id     = "proxyplaneJobOperator${var.custom_role_suffix}"
  title       = "proxyplane job operator"
  description = "Read, run, pause and resume the plane's Cloud Scheduler jobs; never create, change or delete them."
  permissions = [
    "cloudscheduler.jobs.enable",
    "cloudscheduler.jobs.get",
    "cloudscheduler.jobs.list",
    "cloudscheduler.jobs.pause",
    "cloudscheduler.jobs.run",
  ]

  depends_on = [google_project_service.enabled]
}

locals {
  members = merge(
    { for name, sa in google_service_account.function : "fn-${name}" => sa.member },
    {
      api         = google_service_account.api.member
      gateway     = google_service_account.gateway.member
      builder     = google_service_account.builder.member
      pubsub-push = google_service_account.pubsub_push.member
    },
  )

  custom_roles = {
    instance_reaper            = "projects/${var.project_id}/roles/${google_project_iam_custom_role.instance_reaper.role_id}"
    worker_subscriptions       = "projects/${var.project_id}/roles/${google_project_iam_custom_role.worker_subscriptions.role_id}"
    worker_subscription_reaper = "projects/${var.project_id}/roles/${google_project_iam_custom_role.worker_subscription_reaper.role_id}"
    job_operator               = "projects/${var.project_id}/roles/${google_project_iam_custom_role.job_operator.role_id}"
  }

  # Project-level roles, by member key. Every function of functions.json must appear here (the
  # structural test checks it), so a new function gets a deliberate set of roles, not a silent default.
  project_roles = {
    fn-reconcile = ["roles/datastore.user", "roles/compute.instanceAdmin.v1"] # insert/get/delete proxy VMs
    fn-requeue   = ["roles/datastore.user"]
    fn-probe     = ["roles/datastore.user"]
    fn-gc        = ["roles/datastore.user", local.custom_roles.instance_reaper]
    fn-rotation  = ["roles/datastore.user"]
    fn-snapshot  = ["roles/datastore.user", local.custom_roles.worker_subscription_reaper]
    api          = ["roles/datastore.user", local.custom_roles.worker_subscriptions, local.custom_roles.job_operator]
    # Worker subscriptions are created at run time with names Terraform cannot know, and every worker
    # shares this one identity, so a per-subscription grant would isolate nothing: subscriber (pull and
    # ack) on the project is the narrowest role that works.
    # The CONNECT gateway VMs (gateway_connect.tf, when enabled) run as this account too: their
    # container's logs, and COS's VM metrics. The image pull is a grant on the repository there.
    gateway = concat(["roles/pubsub.subscriber"], local.gateway_connect_enabled ? ["roles/logging.logWriter", "roles/monitoring.metricWriter"] : [])
    # https://cloud.google.com/run/docs/configuring/services/build-service-account: build logs, the
    # gcf-artifacts image, and the staged source in Google's gcf-v2-sources bucket.
    builder = ["roles/logging.logWriter", "roles/artifactregistry.writer", "roles/storage.objectAdmin"]
    # Eventarc delivery only: the trigger's identity must be allowed to receive events.
    pubsub-push = local.push_mode ? [] : ["roles/eventarc.eventReceiver"]
  }

  project_bindings = merge([
    for key, roles in local.project_roles : { for role in roles : "${key} ${role}" => { member = key, role = role } }
  ]...)

  # Topic-level grants: who publishes where (the message flow of docs/architecture.md). Exactly the
  # publishers each unit's code reaches (a structural test derives them from the import graph): the API
  # asks for snapshot passes, and so does the snapshot function for a tick whose worker steps failed; the
  # Scheduler's snapshot-tick publishes as Cloud Scheduler's agent.
  topic_publishers = {
    reconcile-requests = ["api", "fn-requeue", "fn-probe", "fn-rotation", "fn-reconcile"]
    snapshot-requests  = ["api", "fn-snapshot"]
    gateway-snapshots  = ["fn-snapshot"]
  }
  topic_subscribers = {
    gateway-snapshots = ["api"] # attachSubscription for the worker subscriptions it creates
  }
  topic_bindings = merge(
    merge([for topic, keys in local.topic_publishers : { for k in keys : "${topic} ${k} publisher" => { topic = topic, member = k, role = "roles/pubsub.publisher" } }]...),
    merge([for topic, keys in local.topic_subscribers : { for k in keys : "${topic} ${k} subscriber" => { topic = topic, member = k, role = "roles/pubsub.subscriber" } }]...),
  )
}

resource "google_project_iam_member" "component" {
  for_each = local.project_bindings

  project = var.project_id
  role    = each.value.role
  member  = local.members[each.value.member]
}

resource "google_pubsub_topic_iam_member" "component" {
  for_each = local.topic_bindings

  topic  = google_pubsub_topic.topic[each.value.topic].name
  role   = each.value.role
  member = local.members[each.value.member]
}

# reconcile attaches the proxy VM account to the instances it inserts (iam.serviceAccounts.actAs).
resource "google_service_account_iam_member" "reconcile_attaches_proxy_vm_account" {
  service_account_id = google_service_account.proxy_vm.name
  role               = "roles/iam.serviceAccountUser"
  member             = local.members["fn-reconcile"]
}

# Pub/Sub mints the push OIDC tokens as pp-pubsub-push (needed for projects created before 2021-04).
resource "google_service_account_iam_member" "pubsub_agent_mints_push_tokens" {
  service_account_id = google_service_account.pubsub_push.name
  role               = "roles/iam.serviceAccountTokenCreator"
  member             = "serviceAccount:${google_project_service_identity.pubsub.email}"
}
