variable "topology_dir" {
  description = "Directory holding the repo's topology tables (pubsub.json, schedules.json, functions.json): the same files the local plane reads through shared/src/config/topology.ts."
  type        = string

  validation {
    condition = alltrue([
      for f in ["pubsub.json", "schedules.json", "functions.json"] : fileexists("${var.topology_dir}/${f}")
    ])
    error_message = "topology_dir must contain pubsub.json, schedules.json and functions.json (normally <repo>/shared/topology)."
  }
}
