# One Cloud Scheduler job per row of shared/topology/schedules.json — the table the local scheduler
# reads — publishing the same bytes to the same topic. Scheduler's service agent publishes (its
# roles/cloudscheduler.serviceAgent carries pubsub.topics.publish), so no service account is needed.

resource "google_cloud_scheduler_job" "job" {
  for_each = module.tables.schedules

  name        = each.key
  description = each.value.description
  region      = var.region
  schedule    = each.value.schedule
  time_zone   = each.value.time_zone

  pubsub_target {
    topic_name = google_pubsub_topic.topic[each.value.topic].id
    data       = base64encode(each.value.data_json)
  }

  depends_on = [google_project_service.enabled]
}
