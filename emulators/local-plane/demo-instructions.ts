// What `npm start` prints once the demo fleet is Ready: how to lease a proxy and fetch the demo target
// through it (with the CLI, and with curl alone), through the gateway when the plane runs one, and where
// the fleet page is. The e2e test runs these exact lines, so they must work as printed. The curl is
// chained to the acquire (`lease=$(…) && eval "$lease" && curl …`): with `eval "$(…)"` a failed acquire
// evaluates nothing, successfully, and the curl would go on with a previous lease's URL or none.
import { DEMO_POOL } from './demo-fleet.js';

export interface DemoInstructionsInput {
  apiUrl: string;
  /** host:port of the demo target site. */
  target: string;
  /** host:port of the demo site's HTTPS side and the certificate to trust it with, when it runs. */
  tlsTarget?: string;
  caFile?: string;
  /** The gateway's forward-proxy URL, when the plane runs one. */
  gatewayProxyUrl?: string;
  /** The fleet page URL, with the one-time ?token= when the plane made the admin token. */
  fleetUrl: string;
  /** A command that kills one demo proxy's process through the Compute emulator's fault endpoint. */
  killCommand?: string;
}

export const LEASE_MARK = '# lease';
export const SOCKS_MARK = '# a SOCKS5 proxy';

export function demoInstructions(i: DemoInstructionsInput): string {
  const lines = [
    '',
    'Try it (in another terminal: paste the export lines above first):',
    '',
    `  ${LEASE_MARK} a US proxy for the demo site, fetch a page through it, and give it back`,
    `  lease=$(npx proxyplane leases acquire --selector pool=${DEMO_POOL},region=us --target ${i.target} -o env) &&`,
    `    eval "$lease" && curl -sS -x "$PROXYPLANE_PROXY_URL" http://${i.target}/`,
    '  npx proxyplane leases release "$PROXYPLANE_LEASE_ID"',
    '',
    '  # the same with curl alone (the answer\'s proxy.url carries the credentials; no "protocols": http only)',
    `  curl -sS -H "Authorization: Bearer $PROXYPLANE_CRAWLER_TOKEN" -H 'content-type: application/json' \\`,
    `    -X POST "$PROXYPLANE_API_URL/v1/leases" -d '{"selector":{"pool":"${DEMO_POOL}"},"target":"${i.target}"}'`,
    '',
    `  ${SOCKS_MARK} (demo-socks, an external one): leased only to who asks for socks5 (the lease above`,
    '  # never gets it); its lease URL is socks5://…, which curl speaks too',
    `  lease=$(npx proxyplane leases acquire --selector pool=${DEMO_POOL},tier=socks5 --protocol socks5 --target ${i.target} -o env) &&`,
    `    eval "$lease" && curl -sS -x "$PROXYPLANE_PROXY_URL" http://${i.target}/`,
    '  npx proxyplane leases release "$PROXYPLANE_LEASE_ID"',
    '',
  ];
  if (i.gatewayProxyUrl) {
    lines.push(
      '  # through the gateway, which picks a healthy proxy per request',
      `  curl -sS -x ${i.gatewayProxyUrl} http://${i.target}/`,
      ...(i.tlsTarget && i.caFile
        ? [
            `  curl -sS --cacert '${i.caFile}' -x ${i.gatewayProxyUrl} https://${i.tlsTarget}/   # CONNECT, TLS inside`,
          ]
        : []),
      '',
    );
  } else {
    lines.push('  (the gateway is not part of this plane yet: fetching through it comes with it)', '');
  }
  lines.push(
    `Fleet page: ${i.fleetUrl}`,
    'In a terminal: npx proxyplane fleet watch   ·   npx proxyplane proxies list',
  );
  if (i.killCommand) lines.push(`Kill a proxy and watch it turn Unhealthy: ${i.killCommand}`);
  return lines.join('\n');
}
