// The default cloud-init of a managed proxy: a GCE startup script for Debian 12 that installs squid and
// runs it as an authenticated, anonymous forward proxy on the proxy port. Credentials are fetched at boot
// from Secret Manager with the VM's own token; the instance metadata carries only the secret's NAME
// (item `proxyplane-credentials-secret`). Squid rather than tinyproxy: hashed passwords (basic_ncsa_auth
// with SHA-512 crypt, where tinyproxy keeps BasicAuth in clear in its config), destination ACLs to keep
// the metadata server and private ranges out of reach, and per-header control. See docs/cloud-init.md.
import { z } from 'zod';
import { CREDENTIALS_SECRET_METADATA_KEY, USERNAME_PATTERN } from './credentials.js';
import { DefaultCloudInitPort } from './proxy-port.js';
import { shellQuote } from './shell.js';
import { Cidr, ConnectPorts, connectPortsOfSquidConf, renderSquidConf } from './squid-conf.js';

const SECRET_OR_VERSION =
  /^projects\/[a-z0-9.:-]{1,100}\/secrets\/[A-Za-z0-9_-]{1,255}(\/versions\/(latest|[1-9]\d{0,9}))?$/;

export const DefaultCloudInitOptions = z.strictObject({
  port: DefaultCloudInitPort,
  /** projects/P/secrets/S[/versions/V]: used when the instance metadata item is missing. */
  credentialsSecret: z.string().regex(SECRET_OR_VERSION, 'a Secret Manager secret or version resource name'),
  connectPorts: ConnectPorts.optional(),
  blockedDestinations: z.array(Cidr).max(128).optional(),
});
export type DefaultCloudInitOptions = z.input<typeof DefaultCloudInitOptions>;

export const PASSWD_FILE = '/etc/squid/proxyplane.passwd';

/** The heredoc that carries squid.conf inside the script. */
const SQUID_CONF_MARKER = 'PROXYPLANE_SQUID_CONF';
const EMBEDDED_SQUID_CONF = new RegExp(`<<'${SQUID_CONF_MARKER}'\\n([\\s\\S]*?)${SQUID_CONF_MARKER}\\n`);

/**
 * The CONNECT ports a startup script rendered by renderDefaultCloudInit gives its squid, or null for any
 * other script (one of the operator's own: what it allows is its business). The Compute emulator reads
 * an instance's `startup-script` metadata item with this, as the VM runs it.
 */
export function connectPortsOfStartupScript(script: string): number[] | null {
  const conf = EMBEDDED_SQUID_CONF.exec(script)?.[1];
  return conf === undefined ? null : connectPortsOfSquidConf(conf);
}

/** Pure: the same options always render the same bytes (the script is part of the spec hash). */
/**
 * The default script's username check, as it is written in the script (USERNAME_PATTERN, the managed
 * rule): a script that holds it reads its secret by that rule — the Compute emulator tells the default
 * script, or a copy that kept the check, from a cloud-init of the proxy's own by it.
 */
export const MANAGED_USERNAME_CHECK = `local user_re='${USERNAME_PATTERN.source}'`;

export function renderDefaultCloudInit(input: DefaultCloudInitOptions): string {
  const o = DefaultCloudInitOptions.parse(input);
  const secret = o.credentialsSecret.includes('/versions/')
    ? o.credentialsSecret
    : `${o.credentialsSecret}/versions/latest`;
  const squidConf = renderSquidConf({
    port: o.port,
    passwdFile: PASSWD_FILE,
    ...(o.connectPorts ? { connectPorts: o.connectPorts } : {}),
    ...(o.blockedDestinations ? { blockedDestinations: o.blockedDestinations } : {}),
  });
  return `#!/bin/bash
# proxyplane default startup script (rendered by shared/src/domain/cloud-init; see docs/cloud-init.md).
# Installs squid from Debian and runs it as an anonymous forward proxy with Basic auth on tcp:${o.port} only.
# The credentials come from Secret Manager at boot, with the VM service account's token: they are never in
# instance metadata, on any process's command line, on disk except as a SHA-512 crypt hash, or in this
# script's output. Runs as root on every boot and is idempotent. Its output reaches the serial console and
# Cloud Logging through the guest agent; any failure ends in a "FATAL" line and a non-zero exit.
set -Eeuo pipefail
shopt -s inherit_errexit
export LC_ALL=C
umask 022

readonly PROXY_PORT=${o.port}
readonly DEFAULT_CREDENTIALS_SECRET=${shellQuote(secret)}
readonly CREDENTIALS_ITEM=${CREDENTIALS_SECRET_METADATA_KEY}
readonly SQUID_CONF=/etc/squid/squid.conf
readonly PASSWD_FILE=${PASSWD_FILE}
readonly PACKAGES=(squid jq openssl curl ca-certificates)
# shellcheck disable=SC2016 # the literal crypt(3) prefix of SHA-512 hashes
readonly SHA512_CRYPT='$6$'
# Overridable only to exercise the script against local fakes; never set on a VM.
readonly METADATA_URL="\${PROXYPLANE_METADATA_URL:-http://metadata.google.internal/computeMetadata/v1}"
readonly SECRET_MANAGER_URL="\${PROXYPLANE_SECRET_MANAGER_URL:-https://secretmanager.googleapis.com/v1}"
readonly SECRET_ATTEMPTS="\${PROXYPLANE_SECRET_ATTEMPTS:-20}"
readonly SECRET_RETRY_SECONDS="\${PROXYPLANE_SECRET_RETRY_SECONDS:-15}"

SECRET_NAME=''
CREDENTIALS=''
PROXY_USER=''
PROXY_PASSWORD=''
READ_FAILURE=''
PASSWD_CHANGED=0
CONF_CHANGED=0
POLICY_RC_CREATED=0

log() { printf 'proxyplane-startup: %s\\n' "$*" >&2; }

# Guest attribute proxyplane/startup = ok | failed (gcloud compute instances get-guest-attributes); a no-op
# unless the instance has enable-guest-attributes=TRUE.
report_status() {
  curl -fsS -X PUT --max-time 5 -H 'Metadata-Flavor: Google' --data "$1" \\
    "\${METADATA_URL}/instance/guest-attributes/proxyplane/startup" >/dev/null 2>&1 || true
}

die() {
  log "FATAL: $*"
  report_status failed
  exit 1
}

on_error() {
  local rc=$?
  log "FATAL: exit \${rc} at line \${BASH_LINENO[0]}: \${BASH_COMMAND}"
  report_status failed
}

cleanup() {
  if ((POLICY_RC_CREATED)); then rm -f /usr/sbin/policy-rc.d; fi
}

trap on_error ERR
trap cleanup EXIT

# metadata_get PATH: the item on stdout; status 2 when it does not exist, 1 on any other failure.
metadata_get() {
  local out code
  out=$(curl -sS --retry 10 --retry-connrefused --retry-delay 1 --max-time 10 \\
    -H 'Metadata-Flavor: Google' -w '\\n%{http_code}' "\${METADATA_URL}/$1") || return 1
  code=\${out##*$'\\n'}
  case \${code} in
    200) printf '%s' "\${out%$'\\n'*}" ;;
    404) return 2 ;;
    *)
      log "the metadata server answered HTTP \${code} for $1"
      return 1
      ;;
  esac
}

apt_get() {
  local attempt
  # About four minutes in all: the mirrors may be out of reach for a while just after boot.
  for attempt in 1 2 3 4 5 6 7 8 9 10; do
    if apt-get -q -y -o DPkg::Lock::Timeout=300 -o Acquire::Retries=3 "$@"; then return 0; fi
    log "apt-get $1 failed (attempt \${attempt} of 10)"
    sleep $((attempt < 6 ? attempt * 5 : 30))
  done
  die "apt-get $* kept failing"
}

install_packages() {
  local missing=() p
  for p in "\${PACKAGES[@]}"; do
    dpkg-query -W -f='\${Status}' "\${p}" 2>/dev/null | grep -q '^install ok installed$' || missing+=("\${p}")
  done
  if ((\${#missing[@]} == 0)); then return 0; fi
  log "installing \${missing[*]}"
  # Keep the package's own squid (Debian's config, port 3128) from starting before ours is written.
  if [[ ! -e /usr/sbin/policy-rc.d ]]; then
    printf '#!/bin/sh\\nexit 101\\n' >/usr/sbin/policy-rc.d
    chmod 0755 /usr/sbin/policy-rc.d
    POLICY_RC_CREATED=1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt_get update
  apt_get install --no-install-recommends "\${missing[@]}"
  cleanup
  POLICY_RC_CREATED=0
}

# The secret's name from instance metadata (the provider sets it), else the one rendered in.
resolve_secret_name() {
  local name rc=0
  local re='^projects/[^/[:space:]]+/secrets/[A-Za-z0-9_-]{1,255}(/versions/(latest|[1-9][0-9]{0,9}))?$'
  name=$(metadata_get "instance/attributes/\${CREDENTIALS_ITEM}") || rc=$?
  if ((rc == 2)); then
    log "instance metadata has no \${CREDENTIALS_ITEM}; using the secret this script was rendered with"
    name=\${DEFAULT_CREDENTIALS_SECRET}
  elif ((rc != 0)); then
    die "could not read the instance metadata item \${CREDENTIALS_ITEM}"
  fi
  [[ \${name} =~ \${re} ]] || die "\${CREDENTIALS_ITEM} is not a Secret Manager secret or version name"
  [[ \${name} == */versions/* ]] || name="\${name}/versions/latest"
  SECRET_NAME=\${name}
}

# secretmanager.versions.access with the VM's token (needs roles/secretmanager.secretAccessor on the secret).
# Asked again for about five minutes before it gives up (SECRET_ATTEMPTS × SECRET_RETRY_SECONDS): a grant
# made moments before the proxy was created takes minutes to reach Secret Manager (403 meanwhile), and
# given up at once the VM never served — nothing runs the script again short of a reset.
fetch_credentials() {
  local attempt
  for ((attempt = 1; ; attempt++)); do
    if read_secret; then return 0; fi
    if ((attempt >= SECRET_ATTEMPTS)); then die "\${READ_FAILURE}"; fi
    log "\${READ_FAILURE} (attempt \${attempt} of \${SECRET_ATTEMPTS}; again in \${SECRET_RETRY_SECONDS} s)"
    sleep "\${SECRET_RETRY_SECONDS}"
  done
}

# One read: CREDENTIALS on success; else READ_FAILURE says why, and the status is 1.
read_secret() {
  local token_json token out code body
  token_json=$(metadata_get instance/service-accounts/default/token) || {
    READ_FAILURE="no access token from the metadata server: does the VM have a service account with the cloud-platform scope?"
    return 1
  }
  token=$(printf '%s' "\${token_json}" | jq -er .access_token) || {
    READ_FAILURE="the metadata token response has no access_token"
    return 1
  }
  # The token reaches curl on stdin (-K -), never on a command line another process could read.
  out=$(printf 'header = "Authorization: Bearer %s"\\n' "\${token}" |
    curl -sS --retry 5 --retry-connrefused --retry-delay 2 --max-time 20 -K - \\
      -w '\\n%{http_code}' "\${SECRET_MANAGER_URL}/\${SECRET_NAME}:access") || {
    READ_FAILURE="Secret Manager could not be reached"
    return 1
  }
  code=\${out##*$'\\n'}
  body=\${out%$'\\n'*}
  if [[ \${code} != 200 ]]; then
    READ_FAILURE="reading \${SECRET_NAME} failed: HTTP \${code} $(printf '%s' "\${body}" | jq -r '(.error.status // "") + ": " + (.error.message // "")' 2>/dev/null || true)"
    return 1
  fi
  CREDENTIALS=$(printf '%s' "\${body}" | jq -er .payload.data | base64 -d) || die "the secret payload is not base64"
}

# username:password (shared/src/domain/cloud-init/credentials.ts holds the same rules).
parse_credentials() {
  ${MANAGED_USERNAME_CHECK} pass_re='^[!-~]{1,256}$'
  [[ \${CREDENTIALS} == *:* ]] || die "the credentials secret must hold username:password"
  PROXY_USER=\${CREDENTIALS%%:*}
  PROXY_PASSWORD=\${CREDENTIALS#*:}
  CREDENTIALS=''
  [[ \${PROXY_USER} =~ \${user_re} ]] || die "the username must be 1-64 of [A-Za-z0-9._~-]"
  [[ \${PROXY_PASSWORD} =~ \${pass_re} ]] || die "the password must be 1-256 printable ASCII characters without spaces"
}

# FILE gets user:SHA-512-crypt, readable by squid's helpers (group proxy); left alone when it already
# holds this password, so a re-run changes nothing.
write_passwd() {
  local file=$1 current salt hash tmp
  PASSWD_CHANGED=0
  if [[ -f \${file} ]]; then
    current=$(head -n 1 "\${file}")
    if [[ \${current%%:*} == "\${PROXY_USER}" && \${current#*:} == "\${SHA512_CRYPT}"* ]]; then
      salt=\${current#*:}
      salt=\${salt#"\${SHA512_CRYPT}"}
      salt=\${salt%%\\$*}
      hash=$(printf '%s\\n' "\${PROXY_PASSWORD}" | openssl passwd -6 -salt "\${salt}" -stdin)
      if [[ "\${PROXY_USER}:\${hash}" == "\${current}" ]]; then
        log "credentials unchanged"
        return 0
      fi
    fi
  fi
  hash=$(printf '%s\\n' "\${PROXY_PASSWORD}" | openssl passwd -6 -stdin)
  tmp=$(mktemp "\${file}.XXXXXX")
  printf '%s:%s\\n' "\${PROXY_USER}" "\${hash}" >"\${tmp}"
  chgrp proxy "\${tmp}"
  chmod 0640 "\${tmp}"
  mv -f "\${tmp}" "\${file}"
  PASSWD_CHANGED=1
  log "credentials installed"
}

install_credentials() {
  resolve_secret_name
  fetch_credentials
  parse_credentials
  write_passwd "$1"
}

write_squid_conf() {
  local tmp out
  CONF_CHANGED=0
  tmp=$(mktemp "\${SQUID_CONF}.XXXXXX")
  cat >"\${tmp}" <<'${SQUID_CONF_MARKER}'
${squidConf}${SQUID_CONF_MARKER}
  chmod 0644 "\${tmp}"
  if ! out=$(squid -k parse -f "\${tmp}" 2>&1); then
    log "\${out}"
    rm -f "\${tmp}"
    die "squid rejected the rendered configuration"
  fi
  if cmp -s "\${tmp}" "\${SQUID_CONF}"; then
    rm -f "\${tmp}"
    return 0
  fi
  mv -f "\${tmp}" "\${SQUID_CONF}"
  CONF_CHANGED=1
  log "squid configuration written"
}

start_squid() {
  systemctl enable --quiet squid
  if ((CONF_CHANGED)) || ! systemctl is-active --quiet squid; then
    log "restarting squid"
    systemctl restart squid
  elif ((PASSWD_CHANGED)); then
    log "reloading squid"
    systemctl reload squid
  fi
}

# squid answers on the port, demands credentials (407) and takes ours (403 for a blocked destination:
# the check needs no Internet access and fetches nothing).
self_check() {
  local i code='' basic
  for ((i = 0; i < 30; i++)); do
    code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 -x "http://127.0.0.1:\${PROXY_PORT}" http://127.0.0.1/ || true)
    if [[ \${code} == 407 ]]; then break; fi
    sleep 1
  done
  [[ \${code} == 407 ]] || die "squid does not answer 407 on tcp:\${PROXY_PORT} (last answer: \${code:-none})"
  basic=$(printf '%s:%s' "\${PROXY_USER}" "\${PROXY_PASSWORD}" | base64 -w 0)
  code=$(printf 'header = "Proxy-Authorization: Basic %s"\\n' "\${basic}" |
    curl -s -o /dev/null -w '%{http_code}' --max-time 5 -K - -x "http://127.0.0.1:\${PROXY_PORT}" http://127.0.0.1/ || true)
  [[ \${code} == 403 ]] || die "squid did not accept the installed credentials (answered \${code:-nothing}, expected 403)"
}

main() {
  log "starting: squid with Basic auth on tcp:\${PROXY_PORT}"
  install_packages
  install_credentials "\${PASSWD_FILE}"
  write_squid_conf
  start_squid
  self_check
  report_status ok
  log "ready: squid on tcp:\${PROXY_PORT}, credentials from \${SECRET_NAME}"
}

# PROXYPLANE_STARTUP_LIBRARY=1 defines the functions without running (for tests); a VM never sets it.
if [[ \${PROXYPLANE_STARTUP_LIBRARY:-} != 1 ]]; then
  main "$@"
fi
`;
}
