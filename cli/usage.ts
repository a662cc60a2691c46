// `proxyplane --help`: every command, flag and variable on one screen (docs/cli.md says more).
export const USAGE = `usage: proxyplane <command> [flags]

Proxies (admin):
  proxies create -f FILE           create the proxies in a YAML or JSON file (- reads stdin)
  proxies list [--attr k=v]... [--phase P] [--protocol http|socks5] [--page-size N]
  proxies get NAME                 -o yaml saves a file that apply -f takes back, edited
  proxies delete NAME
  proxies apply -f FILE            create or change to match the file: created, configured or unchanged
  proxies patch NAME -p JSON       a JSON merge patch of the spec, e.g. -p '{"capacity": 8}'
  proxies reconcile NAME           ask reconcile to look at the proxy now
  proxies cordon NAME              no new leases, renewals or gateway work; what runs finishes
  proxies uncordon NAME            give a cordoned proxy work again
Leases (crawler):
  leases acquire [--selector k=v]... [--protocol http|socks5]... [--target HOST[:PORT]] [--ttl SECONDS]
                 [--exclusive]    (SOCKS5 proxies only with --protocol socks5)
  leases renew ID [--ttl SECONDS]
  leases report ID ok|rate_limited|banned [--target HOST[:PORT]]
  leases release ID
Fleet:
  fleet watch [--interval SECONDS] [--once] [--count N]   live table of every proxy
Gateway routing and workers (admin):
  routing get                      the gateways' ordered routes; -o yaml saves a file apply -f takes back
  routing apply -f FILE            replace the routing (unchanged: nothing written; never over a newer edit)
  gateway workers [--all]          the workers in view (--all: every stored one) and what each holds
  gateway ownership                each gateway-pool proxy's owner and the capacity it could still carry
  gateway reclaim NAME [--ttl SECONDS]   take a pool proxy out (drained first) for 60 s to 7 days (1 h)
  gateway unreclaim NAME           end a reclaim early
Jobs (admin):
  jobs list
  jobs run|pause|resume NAME

Flags for every command (after it, or --api and -o before it):
  --api URL        the API (default $PROXYPLANE_API_URL, else the local plane's)
  -o, --output F   table (default), json, yaml; leases acquire also: env (for eval), url;
                   leases report, release, gateway unreclaim: table only; fleet watch: table or json
  -h, --help

Credentials: $PROXYPLANE_TOKEN, else $PROXYPLANE_ADMIN_TOKEN (admin commands) or
$PROXYPLANE_CRAWLER_TOKEN (leases), else a running local plane's own tokens, else
\`gcloud auth print-identity-token\` (sent only to an https:// API URL, or over plain http to one on
this machine you named with --api or $PROXYPLANE_API_URL).
Exit codes: 0 done, 1 the API refused or could not be reached, 2 bad usage or input (nothing sent).`;
