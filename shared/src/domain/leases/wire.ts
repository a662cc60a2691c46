// The crawler-facing wire format of discovery and leases: one set of zod schemas from which the service
// validates requests, the OpenAPI 3.1 document is generated (names via .meta({ id })), and the typed
// client takes its types.
import { z } from 'zod';
import { Attributes, Phase, ProxyProtocol } from '../proxy.js';
import { LeaseResult, TTL_BOUNDS } from './model.js';
import { canonicalTarget, MAX_HOST_NAME } from './target.js';

/**
 * A site a crawler fetches, as host, host:port, [IPv6] or [IPv6]:port, in its one spelling (target.ts:
 * lower case, IPv6 in RFC 5952 form) since cooldowns are keyed by it. Never GLOBAL_TARGET.
 */
export const Target = z
  .string()
  .min(1)
  // The host's own limit is canonicalTarget's: here room for it, a trailing dot and ":65535".
  .max(MAX_HOST_NAME + 7)
  .regex(
    // The characters a target may have; canonicalTarget judges the rest (a bare IPv6 address may end in
    // "::", a name start with "_" as the gateway takes it).
    /^(\[[0-9A-Fa-f:.]+\](:[0-9]{1,5})?|[A-Za-z0-9_:]([-A-Za-z0-9._:]*[A-Za-z0-9._:])?)$/,
    'a host name, host:port, [IPv6 address] or [IPv6 address]:port',
  )
  .transform((t, ctx) => {
    const target = canonicalTarget(t);
    if (target !== null) return target;
    ctx.addIssue({
      code: 'custom',
      message: 'a host name, host:port, [IPv6 address] or [IPv6 address]:port',
      input: t,
    });
    return z.NEVER;
  })
  .meta({
    description:
      'The site to be fetched, as host or host:port (an IPv6 address in brackets, as in a URL: `[2001:db8::1]:443`); the grant returns it in one spelling (lower case, an IPv6 address in its RFC 5952 form, the port as a number). A cooldown is kept per (proxy, site): the host of the target, whatever its port — one reported for `shop.example:443` holds for `shop.example:8443` too.',
  });

const TtlSeconds = z.int().min(TTL_BOUNDS.min).max(TTL_BOUNDS.max);

/**
 * The protocols a crawler's client can speak. SOCKS5 is opt-in: crawlers deployed before SOCKS5 proxies
 * existed (Python requests without PySocks, clients generated when `protocol` was the literal `http`)
 * send no `protocols` and must keep getting http:// URLs when an admin adds a SOCKS5 proxy to their pool.
 */
export const LeaseProtocols = z
  .array(ProxyProtocol)
  .min(1)
  .refine((ps) => new Set(ps).size === ps.length, 'protocols must not repeat')
  .default(['http'])
  .meta({
    description:
      'Proxy protocols the client can use; only proxies speaking one of them are leased. Default `["http"]`: SOCKS5 proxies are leased only to a crawler that asks for `socks5`.',
  });

export const AcquireRequest = z
  .object({
    selector: Attributes.meta({ description: 'Attributes a proxy must have (equality on every key).' }),
    ttlSeconds: TtlSeconds.default(TTL_BOUNDS.default),
    target: Target.optional(),
    exclusive: z.boolean().default(false).meta({ description: 'Take the whole proxy (all its capacity).' }),
    protocols: LeaseProtocols,
  })
  .strict()
  .meta({ id: 'AcquireRequest' });
export type AcquireRequest = z.infer<typeof AcquireRequest>;

export const LeasedProxy = z
  .object({
    name: z.string(),
    url: z.string().meta({
      description:
        'Proxy URL (`http://` or `socks5://`), with credentials when the proxy has them. Keep it secret.',
    }),
    host: z.string(),
    port: z.int(),
    protocol: ProxyProtocol.meta({ description: 'What the proxy speaks: HTTP (CONNECT) or SOCKS5.' }),
    attributes: z.record(z.string(), z.string()),
    latencyMillis: z.number().nullable(),
  })
  .meta({ id: 'LeasedProxy' });

export const LeaseGrant = z
  .object({
    leaseId: z.string(),
    proxy: LeasedProxy,
    expiresAt: z.iso.datetime(),
    ttlSeconds: z.int(),
    target: z.string().nullable(),
    exclusive: z.boolean(),
  })
  .meta({ id: 'LeaseGrant' });
export type LeaseGrant = z.infer<typeof LeaseGrant>;

export const NoMatch = z
  .object({
    error: z.literal('no_match'),
    message: z.string(),
    considered: z.int().meta({
      description: 'Proxies matching the selector and speaking one of the requested protocols.',
    }),
    // Defaults to 0 so the typed client still reads a 409 from a service older than the field.
    inGateway: z.int().default(0).meta({
      description:
        'Held by the gateway: in the gateway pool (not reclaimed), or still owned by a gateway worker while it drains.',
    }),
    atCapacity: z.int(),
    inCooldown: z.int(),
    cooldownEndsAt: z.iso.datetime().optional().meta({
      description:
        'When inCooldown > 0: the soonest end of those cooldowns, when one of them is leasable again for this target as far as cooldowns go (the answer also carries Retry-After, in seconds to it). Absent otherwise.',
    }),
    unhealthy: z.int(),
    // Defaults to 0 like inGateway: services older than `cordoned` do not send it.
    cordoned: z.int().default(0).meta({
      description:
        'Cordoned by an operator (spec.cordoned): kept out of new leases until uncordoned. Part of `considered`, counted before every other reason.',
    }),
    // Defaults to 0 like inGateway: services older than `protocols` do not send it.
    otherProtocol: z.int().default(0).meta({
      description:
        'Proxies matching the selector that speak none of the requested protocols (e.g. SOCKS5 proxies for a request without "socks5" in `protocols`). Not part of `considered`.',
    }),
  })
  .meta({ id: 'NoMatch' });
export type NoMatch = z.infer<typeof NoMatch>;

export const RenewRequest = z
  .object({
    ttlSeconds: TtlSeconds.optional().meta({
      description:
        "Default: the lease's TTL — the one it was granted with, or the one its last renewal named (a renewal sets it).",
    }),
  })
  .strict()
  .meta({ id: 'RenewRequest' });

export const RenewResponse = z
  .object({ leaseId: z.string(), expiresAt: z.iso.datetime(), ttlSeconds: z.int() })
  .meta({ id: 'RenewResponse' });
export type RenewResponse = z.infer<typeof RenewResponse>;

export const ReportRequest = z
  .object({ result: LeaseResult, target: Target.optional() })
  .strict()
  .meta({ id: 'ReportRequest' });
export type ReportRequest = z.infer<typeof ReportRequest>;

export const LeaseIdParam = z.object({ id: z.string().meta({ param: { name: 'id', in: 'path' } }) });

/**
 * One entry of GET /v1/proxies as a crawler reads it: the stored proxy (spec, status) plus `healthy`,
 * `leasable` and `activeLeases`. Only the fields crawlers use are checked; the rest passes through.
 */
export const ListedProxy = z.looseObject({
  name: z.string(),
  spec: z.looseObject({ attributes: z.record(z.string(), z.string()), capacity: z.int() }),
  status: z.looseObject({ phase: Phase, latencyMillis: z.number().nullable() }),
  healthy: z.boolean(),
  // Optional: services older than the gateway gate do not send it.
  leasable: z.boolean().optional(),
  activeLeases: z.int(),
  // Only when so: the stored lease state does not decode; the proxy counts as full (activeLeases = capacity).
  leaseStateInvalid: z.literal(true).optional(),
});
export type ListedProxy = z.infer<typeof ListedProxy>;

export const ListedProxies = z.object({
  proxies: z.array(ListedProxy),
  count: z.int(),
  // Paged listings only (?pageSize=, ?pageToken=): the next page's token, null on the last.
  nextPageToken: z.string().nullable().optional(),
});
export type ListedProxies = z.infer<typeof ListedProxies>;

/** The most proxies one page of the listing reads (`?pageSize=`): the service's bound, the clients' too. */
export const MAX_LIST_PAGE_SIZE = 1000;

/**
 * Whether a `400 invalid_request` body is the refusal of a service older than paging — `pageSize` a query
 * parameter it does not read —, which a client then asks once more, unpaged (the typed client, the CLI).
 */
export function refusesPaging(body: unknown): boolean {
  const issues = (body as { issues?: unknown } | null)?.issues;
  return (
    Array.isArray(issues) &&
    issues.some(
      (i: { path?: unknown; message?: unknown } | null) =>
        i?.path === 'pageSize' &&
        typeof i.message === 'string' &&
        i.message.startsWith('unknown query parameter'),
    )
  );
}
