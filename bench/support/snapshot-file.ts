// Builds a standalone snapshot file (the format functions/gateway/src/file-source.ts reads) for tests and
// the bench: N proxy entries over the given upstream proxy URLs, one catch-all route, credentials inline.
import type { GatewayRoute } from '../../shared/src/messages/gateway-snapshot.js';

export interface SnapshotFileOptions {
  upstreams: string[];
  /** Entries per upstream (the harness's peers use 1000 identical entries). */
  copies?: number;
  capacity?: number;
  routing?: GatewayRoute[];
  version?: number;
  workerId?: string;
  /** Per-entry overrides by index (e.g. an expired usableUntil). */
  usableUntil?: (index: number) => string;
  attributes?: (index: number) => Record<string, string>;
  /** Per-entry filtersDestinations (absent: the field is left out, as for an external proxy). */
  filtersDestinations?: (index: number) => boolean;
  /** Per-entry excludedRoutes (absent or empty: the field is left out, as for a reachable proxy). */
  excludedRoutes?: (index: number) => string[];
  now?: Date;
}

export function snapshotFile(opts: SnapshotFileOptions) {
  const now = opts.now ?? new Date();
  const later = new Date(now.getTime() + 365 * 24 * 3600 * 1000).toISOString();
  const credentials: Record<string, string> = {};
  const proxies = opts.upstreams.flatMap((raw, u) => {
    const url = new URL(raw);
    const secret = `upstream-${u}`;
    if (url.username)
      credentials[secret] = `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`;
    return Array.from({ length: opts.copies ?? 1 }, (_, c) => {
      const i = u * (opts.copies ?? 1) + c;
      return {
        name: `p-${u}-${c}`,
        host: url.hostname,
        port: Number(url.port || 80),
        protocol: 'http' as const,
        capacity: opts.capacity ?? 1000,
        expiresAt: later,
        usableUntil: opts.usableUntil?.(i) ?? later,
        attributes: opts.attributes?.(i) ?? {},
        ...(url.username ? { credentialsRef: { secret, version: 'latest' } } : {}),
        ...(opts.filtersDestinations?.(i) ? { filtersDestinations: true } : {}),
        ...(opts.excludedRoutes?.(i).length ? { excludedRoutes: opts.excludedRoutes(i) } : {}),
      };
    });
  });
  return {
    schemaVersion: 1 as const,
    version: opts.version ?? 1,
    ownershipEpoch: 1,
    workerId: opts.workerId ?? 'standalone',
    generatedAt: now.toISOString(),
    validUntil: later,
    routing: opts.routing ?? [
      { name: 'default', match: { hosts: ['*'] }, selector: {}, policy: 'least-active' as const },
    ],
    proxies,
    credentials,
  };
}
