# Firestore (native mode): the plane's only store. Collection names live here once; the indexes and TTL
# policies below refer to them. Documents stay readable in the console (see shared/src/domain/proxy.ts).

locals {
  collections = {
    proxies   = "proxies"   # proxies/{name}: spec, status, generation, uid, deletionRequestedAt
    leases    = "leases"    # leases/{leaseId}: proxy, target, expireAt (TTL)
    cooldowns = "cooldowns" # cooldowns/{proxy|target}: expireAt (TTL)
    health    = "health"    # health/{proxy}: probe counters, written only when they change
    workers   = "workers"   # workers/{workerId}: session, ownership epoch, ACKed snapshot, runtime report
    snapshots = "snapshots" # snapshots/{workerId}: the last snapshot built for a worker
    job_runs  = "jobRuns"   # jobRuns/{job}: last run of each Scheduler-driven sweep
  }

  # TTL policies: Firestore deletes a document some time (typically within 24 h) after its expireAt
  # passes (https://cloud.google.com/firestore/docs/ttl). So expireAt must be when the document may
  # vanish — for a lease, its expiry plus the CooldownWindow during which a late report still resolves
  # it — and every read still compares expiry against the clock (the seed: correctness never depends on
  # the sweep).
  ttl_fields = {
    leases    = { collection = local.collections.leases, field = "expireAt" }
    cooldowns = { collection = local.collections.cooldowns, field = "expireAt" }
  }

  # Composite indexes for the queries that filter on one field and range or order on another. Equality-
  # only and single-field range queries (requeue: status.nextReconcileAt <= now; rotation:
  # spec.cloudInit.secretRef.secret == s) are served by Firestore's automatic single-field indexes.
  composite_indexes = {
    # A proxy's live leases: where proxy == p and expireAt > now (capacity check inside the lease transaction).
    leases-by-proxy = {
      collection = local.collections.leases
      fields     = [{ path = "proxy", order = "ASCENDING" }, { path = "expireAt", order = "ASCENDING" }]
    }
    # Cooldowns in force for one target: where target == t and expireAt > now (lease selection skips them).
    cooldowns-by-target = {
      collection = local.collections.cooldowns
      fields     = [{ path = "target", order = "ASCENDING" }, { path = "expireAt", order = "ASCENDING" }]
    }
    # The gateway pool a snapshot is built from: where spec.gatewayPool == true and status.phase == Ready, by name.
    gateway-pool = {
      collection = local.collections.proxies
      fields = [
        { path = "spec.gatewayPool", order = "ASCENDING" },
        { path = "status.phase", order = "ASCENDING" },
        { path = "name", order = "ASCENDING" },
      ]
    }
  }
}

resource "google_firestore_database" "default" {
  # "(default)": the database the @google-cloud/firestore client opens when given no databaseId.
  name                        = "(default)"
  location_id                 = coalesce(var.firestore_location, var.region)
  type                        = "FIRESTORE_NATIVE"
  concurrency_mode            = "PESSIMISTIC" # lease transactions lock what they read: no over-grant under contention
  app_engine_integration_mode = "DISABLED"
  delete_protection_state     = var.firestore_deletion_protection ? "DELETE_PROTECTION_ENABLED" : "DELETE_PROTECTION_DISABLED"
  deletion_policy             = var.firestore_deletion_protection ? "ABANDON" : "DELETE"

  depends_on = [google_project_service.enabled]
}

resource "google_firestore_field" "ttl" {
  for_each = local.ttl_fields

  database   = google_firestore_database.default.name
  collection = each.value.collection
  field      = each.value.field

  # No index_config block: the field keeps its automatic single-field indexes (an empty block would
  # drop them, and expiry range queries need them).
  ttl_config {}
}

resource "google_firestore_index" "composite" {
  for_each = local.composite_indexes

  database    = google_firestore_database.default.name
  collection  = each.value.collection
  query_scope = "COLLECTION"

  dynamic "fields" {
    for_each = each.value.fields
    content {
      field_path = fields.value.path
      order      = fields.value.order
    }
  }
}
