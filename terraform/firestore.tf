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
    lease_keys  = "leaseKeys"  # leaseKeys/{sha256(holder, Idempotency-Key)}: lease id + request digest, expireAt (TTL)
    workers     = "workers"    # workers/{workerId}: session, ownership epoch, ACKed snapshot, runtime report
    snapshots   = "snapshots"  # snapshots/{workerId}: the last snapshot built for a worker
    job_runs    = "jobRuns"    # jobRuns/{job}: last run of each Scheduler-driven sweep
    # Gateway control plane (docs/gateway-control-plane.md):
    ownership       = "ownership"      # ownership/state (epoch, planner lock) + ownership/shard-NN (owner per proxy)
    worker_outcomes = "workerOutcomes" # workerOutcomes/{worker}__{session}__{seq}: outcome batch, expireAt
    gateway_config  = "gatewayConfig"  # gatewayConfig/routing: the ordered routes of every snapshot
    reclaims        = "reclaims"       # reclaims/{proxy}: pool proxy taken out for an exclusive lease, expireAt
    cursors         = "cursors"        # cursors/probe-passive: how far the probe has counted workerOutcomes
    replacements    = "replacements"   # replacements/slots: the replacement slots pacing stale-hash replacements (reconcile)
  }

  # TTL policies on every collection whose documents expire: the lease service's (shared/src/adapters/
  # firestore/lease-collections.ts: TTL_FIELD), the gateway outcome batches (worker-outcome-store.ts:
  # OUTCOME_TTL_FIELD, one hour after receipt; the probe reads only the last few minutes) and the pool
  # reclaims (ownership-reclaim-store.ts: RECLAIM_TTL_FIELD, at the reclaim's end). Firestore deletes a
  # document some time (typically within 24 h) after its expireAt passes
  # (https://cloud.google.com/firestore/docs/ttl), so nothing relies on it for correctness: every read
  # compares expiry against the clock, as the seed's lease store does.
  ttl_fields = {
    leases          = { collection = local.collections.leases, field = "expireAt" }
    lease_state     = { collection = local.collections.lease_state, field = "expireAt" }
    cooldowns       = { collection = local.collections.cooldowns, field = "expireAt" }
    lease_keys      = { collection = local.collections.lease_keys, field = "expireAt" }
    worker_outcomes = { collection = local.collections.worker_outcomes, field = "expireAt" }
    reclaims        = { collection = local.collections.reclaims, field = "expireAt" }
  }

  # Single-field index exemptions for large maps and arrays that no query ever filters or orders on.
  # Firestore indexes every subfield of a map and every array element by default: an ownership shard or
  # an outcome batch over 10,000 proxies would cost thousands of index entries per write (write latency,
  # storage, and the 40,000-index-entries-per-document limit) for nothing
  # (https://cloud.google.com/firestore/docs/query-data/index-overview#single-field_index_exemptions).
  # An exemption on a map covers its subfields. `parts` is the collection group of snapshots/{id}/parts.
  index_exemptions = {
    worker_report     = { collection = local.collections.workers, field = "report" }          # runtime counts per proxy
    snapshot_routing  = { collection = local.collections.snapshots, field = "routing" }       # ordered routes
    snapshot_draining = { collection = local.collections.snapshots, field = "draining" }      # proxy → epoch
    snapshot_parts    = { collection = "parts", field = "proxies" }                           # snapshot proxies
    ownership_proxies = { collection = local.collections.ownership, field = "proxies" }       # proxy → owner
    outcome_tallies   = { collection = local.collections.worker_outcomes, field = "proxies" } # proxy → tally
    health_latency    = { collection = local.collections.health, field = "latencyHistory" }   # sparkline samples
    passive_tracked   = { collection = local.collections.cursors, field = "tracked" }         # proxies with passive evidence
    lease_entries     = { collection = local.collections.lease_state, field = "entries" }     # ≤ capacity lease entries
    # Timestamps that only grow, written at every grant, release or renewal and never queried: indexed,
    # each would hold its collection to Firestore's 500 writes a second for sequential indexed values
    # (https://cloud.google.com/firestore/docs/best-practices).
    # leases.endsAt stays indexed: the active-lease count ranges on it (docs/operations.md § Firestore write
    # limits).
    lease_granted_at    = { collection = local.collections.leases, field = "grantedAt" }
    lease_expires_at    = { collection = local.collections.leases, field = "expiresAt" }
    lease_released_at   = { collection = local.collections.leases, field = "releasedAt" }
    lease_state_updated = { collection = local.collections.lease_state, field = "updatedAt" }
    lease_key_created   = { collection = local.collections.lease_keys, field = "createdAt" }
    cooldown_reported   = { collection = local.collections.cooldowns, field = "reportedAt" }
  }

  # Composite indexes for queries that filter on one field and range or order on another. The code's
  # queries need none today: proxies by status.phase and spec.attributes.<k> are equality-only (served by
  # merging single-field indexes, whose entries end in document-id order: so is a page of GET /v1/proxies,
  # ordered by document id ascending after a startAfter), listDue ranges and orders on status.nextReconcileAt alone (a single-
  # field index), holdsUid is a prefix range on proxies.uid alone and recordsInstance an equality on
  # proxies.status.providerId alone (single-field indexes: never exempt those two), the snapshot pass ranges on workers.validUntil and on snapshots.grantedUntil alone (single-field
  # indexes: never exempt those two), its worker retention ranges on workers.validUntil and
  # snapshots.validUntil and filters workerOutcomes on workerId alone (the cutoff on receivedAt is checked
  # in code, so no composite is needed), the admin listing pages workers by document id, and the lease
  # service reads documents by id and listens to the cooldowns still running (a range on cooldowns.until
  # alone: never exempt it). A query that needs one fails with FAILED_PRECONDITION and the index
  # to add; add it here, never in the console.
  composite_indexes = {}
}

resource "google_firestore_database" "default" {
  # "(default)": the database the @google-cloud/firestore client opens when given no databaseId.
  name                        = "(default)"
  location_id                 = coalesce(var.firestore_location, var.region)
  type                        = "FIRESTORE_NATIVE"
  concurrency_mode            = "PESSIMISTIC" # Firestore's default; governs transactions only (replacement slots, job runs, gateway routing, snapshots, worker retention), not the preconditioned writes of leases and ownership
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

  # No index on a TTL field: no query reads expireAt (every read compares expiry against the clock), and
  # an expiry time only grows, which held an indexed collection to 500 writes a second (Firestore's TTL
  # guidance: https://cloud.google.com/firestore/docs/ttl).
  index_config {}
  ttl_config {}
}

resource "google_firestore_field" "no_index" {
  for_each = local.index_exemptions

  database   = google_firestore_database.default.name
  collection = each.value.collection
  field      = each.value.field

  # An empty index_config: no single-field index at all on this field (and its subfields).
  index_config {}
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
