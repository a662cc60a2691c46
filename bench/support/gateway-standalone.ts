// The harness's "3-line wrapper" for this gateway: it is started with UPSTREAM_PROXY_URL and PORT (the
// proxy port), writes a standalone snapshot of 1000 entries over that upstream (like the harness's
// peers' in-memory snapshots), and runs the gateway's real entry point in this process. The entries are
// marked filtersDestinations, as the control plane marks a managed proxy: the bench's squid is stock and
// must reach its loopback target, but what the gateway does does not depend on whether the upstream
// really filters, only on the mark (GATEWAY_PLAIN_HTTP=pinned gives the external-proxy behaviour).
import { rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { snapshotFile } from './snapshot-file.js';

const upstream = process.env.UPSTREAM_PROXY_URL;
if (!upstream) throw new Error('UPSTREAM_PROXY_URL is required');
const file = join(tmpdir(), `gateway-bench-snapshot-${process.pid}.json`);
writeFileSync(
  file,
  JSON.stringify(
    snapshotFile({ upstreams: [upstream], copies: 1000, capacity: 1000, filtersDestinations: () => true }),
  ),
);
// The gateway re-reads the file on SIGHUP, so it stays until the process ends; every run used to leave one.
process.once('exit', () => rmSync(file, { force: true }));

// The harness's PORT is the proxy listener; bench/gateway-fetch.ts runs it with the proxy listener off and
// the HTTP one (/v1/fetch) on a port of its own.
process.env.GATEWAY_PROXY_PORT ??= process.env.PORT ?? '19130';
process.env.PORT = process.env.GATEWAY_HTTP_PORT ?? '0';
process.env.HOST ??= '127.0.0.1';
process.env.GATEWAY_CLIENT_USERS ??= 'client:secret';
process.env.GATEWAY_SSRF_ALLOW ??= '127.0.0.1:19001,127.0.0.1:19002';
process.env.LOG_LEVEL ??= 'warn';
process.argv.push('--snapshot', file);
await import('../../functions/gateway/src/main.js');
