output "api_url" {
  description = "Base URL of the API (discovery, leases, admin, worker endpoints): $API in docs/deploy.md. Its deterministic run.app URL, the audience the API accepts identity tokens for (not the service's hashed *.a.run.app uri)."
  value       = local.api_url
}

output "gateway_url" {
  description = "Base URL of the gateway's fetch-through-the-fleet endpoint (Cloud Run; crawlers need roles/run.invoker via crawler_principals)."
  value       = google_cloud_run_v2_service.gateway.uri
}

output "service_accounts" {
  description = "E-mail of each component's service account."
  value = merge(
    { for name, sa in google_service_account.function : "function-${name}" => sa.email },
    {
      api         = google_service_account.api.email
      gateway     = google_service_account.gateway.email
      proxy-vm    = google_service_account.proxy_vm.email
      pubsub-push = google_service_account.pubsub_push.email
      builder     = google_service_account.builder.email
    },
  )
}

output "egress_addresses" {
  description = "Static addresses the gateway (on Cloud Run, and on the CONNECT VMs when gateway_connect_enabled) and the probe function reach proxies from (Cloud NAT); add them to allow lists of externally run proxies."
  value       = google_compute_address.nat[*].address
}

output "proxy_vm_network" {
  description = "What reconcile puts on every proxy VM: the network (its GCE_NETWORK), the tag the firewall targets (NETWORK_TAG in the code), the port the firewall opens (a managed proxy's spec.port must equal it; 3128 is the default of both) and the VM service account (GCE_SERVICE_ACCOUNT)."
  value = {
    network         = google_compute_network.plane.self_link
    tag             = local.proxy_network_tag
    port            = var.proxy_port
    service_account = google_service_account.proxy_vm.email
  }
}

output "image_repository" {
  description = "Artifact Registry path the api and gateway images are pushed to (terraform/images/cloudbuild.yaml)."
  value       = local.image_repository
}

output "functions" {
  description = "Deployed function name => the topic that triggers it."
  value       = { for name, f in module.tables.functions : name => f.topic }
}

output "gateway_connect_proxy" {
  description = "host:port of the gateway's CONNECT listener (the load balancer's static address and the port the VMs listen on): HTTPS_PROXY=http://<user>:<pass>@<this> with a gateway-clients user. Null unless gateway_connect_enabled."
  value       = local.gateway_connect_enabled ? "${google_compute_address.gateway_connect[0].address}:${local.gateway_connect_port}" : null
}

output "gateway_connect_instance_group" {
  description = "The CONNECT gateway VMs' regional managed instance group (gcloud compute instance-groups managed … --region=<region>): roll it to pick up a new gateway-clients version. Null unless gateway_connect_enabled."
  value       = local.gateway_connect_enabled ? google_compute_region_instance_group_manager.gateway_connect[0].name : null
}
