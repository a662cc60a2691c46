# Firestore (native mode): the plane's only store. Collection names live here once; the indexes and TTL
# policies below refer to them. Documents stay readable in the console (see shared/src/domain/proxy.ts).

locals {
  # shared/src/adapters/firestore/collections.ts names the same collections (the structural test checks).
  collections = {
    proxies     = "proxies"    # proxies/{name}: spec, status, generation, uid, deletionRequestedAt
    health      = "health"     # health/{proxy}: probe counters, written only when they change
    leases      = "leases"     # leases/{leaseId}: one lease, expireAt (TTL)
    lease_state = "leaseState" # leaseState/{proxy}: the proxy's active lease entries, expireAt (TTL)
    cooldowns   = "cooldowns"  # cooldowns/{proxy}__{sha1(target)}: expireAt (TTL)
    workers     = "workers"    # workers/{workerId}: session, ownership epoch, ACKed snapshot, runtime report
    snapshots   = "snapshots"  # snapshots/{workerId}: the last snapshot built for a worker
    job_runs    = "jobRuns"    # jobRuns/{job}: last run of each Scheduler-driven sweep
    # Gateway control plane (docs/gateway-control-plane.md):
    ownership       = "ownership"      # ownership/state (epoch, planner lock) + ownership/shard-NN (owner per proxy)
    worker_outcomes = "workerOutcomes" # workerOutcomes/{worker}__{session}__{seq}: outcome batch, expireAt
    gateway_config  = "gatewayConfig"  # gatewayConfig/routing: the ordered routes of every snapshot
    reclaims        = "reclaims"       # reclaims/{proxy}: pool proxy taken out for an exclusive lease, expireAt
    cursors         = "cursors"        # cursors/probe-passive: how far the probe has counted workerOutcomes
  }

  # TTL policies on every collection the lease service writes (shared/src/adapters/firestore/
  # lease-collections.ts: TTL_FIELD). Firestore deletes a document some time (typically within 24 h) after
  # its expireAt passes (https://cloud.google.com/firestore/docs/ttl), so nothing relies on it for
  # correctness: every read compares expiry against the clock, as the seed's lease store does.
  ttl_fields = {
    leases      = { collection = local.collections.leases, field = "expireAt" }
    lease_state = { collection = local.collections.lease_state, field = "expireAt" }
    cooldowns   = { collection = local.collections.cooldowns, field = "expireAt" }
  }

  # Composite indexes for queries that filter on one field and range or order on another. The code's
  # queries need none today: proxies by status.phase and spec.attributes.<k> are equality-only (served by
  # merging single-field indexes), listDue ranges and orders on status.nextReconcileAt alone (a single-
  # field index), and the lease service reads documents by id and listens to whole collections. A query
  # that needs one fails with FAILED_PRECONDITION and the index to add; add it here, never in the console.
  composite_indexes = {}
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
