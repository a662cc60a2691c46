#!/bin/bash
# Startup script of a gateway VM serving the CONNECT listener (docs/deploy.md § Where the gateway's
# CONNECT listener runs): Container-Optimized OS, running as pp-gateway. Runs as root at every boot: reads
# the client users with the VM's account, writes them to a root-only env file (never into the instance
# metadata) and (re)starts the gateway container. test/terraform/gateway-connect-startup.test.ts runs it.
set -euo pipefail
state=/var/lib/pp-gateway
md() { curl -sSf -H 'Metadata-Flavor: Google' "http://metadata.google.internal/computeMetadata/v1/$1"; }
project=$(md project/project-id)
image=$(md instance/attributes/gateway-image)
token=$(md instance/service-accounts/default/token | sed -E 's/.*"access_token":"([^"]+)".*/\1/')
umask 077
mkdir -p "$state"
# The grants this boot needs (reading the clients secret, pulling the image) are made in the same apply as
# the VM and take minutes to propagate: a refused call is tried again every 15 s, 18 tries shared by both
# (about 4½ minutes, each try bounded) — within autohealing's first look (initial_delay_sec, 300 s), which
# recreates a VM that never served, and whose next boot tries again.
tries=18
retry() {
  until "$@"; do
    tries=$((tries - 1))
    [ "$tries" -gt 0 ] || return 1
    sleep 15
  done
}
# The token goes to curl on stdin (-H @-), not its command line, which every process on the VM can read.
# Each try writes the answer afresh (a transfer cut half-way leaves nothing of itself for the next to add to).
access() {
  printf 'Authorization: Bearer %s\n' "$token" | curl -sSf --max-time 20 -H @- -o "$state/access.json" \
    "https://secretmanager.googleapis.com/v1/projects/$project/secrets/$(md instance/attributes/clients-secret)/versions/latest:access"
}
retry access
# The value is joined onto one line: docker's --env-file has no multi-line values. A JSON array may span
# lines (joined with spaces); user:pass pairs one per line are joined with commas, as the gateway splits them.
users=$(sed -nE 's/.*"data": *"([^"]+)".*/\1/p' "$state/access.json" | base64 -d)
case "$(printf '%s' "$users" | tr -d ' \t\r\n' | cut -c1)" in
'[') users=$(printf '%s' "$users" | tr '\r\n' '  ') ;;
*) users=$(printf '%s' "$users" | tr '\r\n' ',,') ;;
esac
rm -f "$state/access.json"
printf 'GATEWAY_CLIENT_USERS=%s\n' "$users" >"$state/env"
# Container-Optimized OS accepts only SSH until told otherwise, and with --network=host Docker opens
# nothing: let the CONNECT listener (8081) and the HTTP one (8080: /v1/fetch, health checks) in.
iptables -w -C INPUT -p tcp -m multiport --dports 8080,8081 -j ACCEPT 2>/dev/null ||
  iptables -w -A INPUT -p tcp -m multiport --dports 8080,8081 -j ACCEPT
export HOME="$state" # where docker-credential-gcr writes docker's config
docker-credential-gcr configure-docker --registries="${image%%/*}"
retry docker pull -q "$image" >/dev/null
# Optional (Terraform sets both from the variables the Cloud Run gateway gets): the image's defaults otherwise.
log_level=$(md instance/attributes/log-level 2>/dev/null || echo info)
gc_marking=$(md instance/attributes/gc-marking 2>/dev/null || echo atomic)
# gc-threads=single: the image's command (`node .`) with V8's single-threaded GC, a Node flag no env
# variable sets (functions/gateway/src/gc-threads.ts); anything else, or none: the image's own command.
command=()
[ "$(md instance/attributes/gc-threads 2>/dev/null || echo parallel)" = single ] && command=(node --single-threaded-gc .)
docker rm -f pp-gateway >/dev/null 2>&1 || true
docker run -d --name pp-gateway --restart=always --network=host --env-file="$state/env" \
  -e GOOGLE_CLOUD_PROJECT="$project" -e REGION="$(md instance/attributes/region)" \
  -e CONTROL_PLANE_URL="$(md instance/attributes/control-plane-url)" -e GATEWAY_PROXY_PORT=8081 \
  -e LOG_LEVEL="$log_level" -e GATEWAY_GC_MARKING="$gc_marking" "$image" "${command[@]}"
