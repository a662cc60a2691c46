// Request and response schemas of the admin routes, built from the domain's zod schemas so that the
// validator and /openapi.json can never disagree with the Firestore converter and the messages.
import { z } from '@hono/zod-openapi';
import {
  Attributes,
  Phase,
  ProxyName,
  ProxyProtocol,
  ProxyResource,
  ProxySpec,
} from '../../../../shared/src/domain/proxy.js';
import { FORBIDDEN_KEYS } from '../validation/json-guard.js';
import { ifMatchHeader } from './if-match-header.js';
import {
  DEFAULT_LIST_PAGE_SIZE,
  type ListFilters,
  MAX_LIST_PAGE_SIZE,
  readPageToken,
} from './list-paging.js';

// zod 4 copies prototype methods onto each schema when it is built, so the domain's schemas (built before
// @hono/zod-openapi extended zod, and without importing it: the domain stays pure) lack .openapi().
// A clone is built now, after the extension, and carries it.
const documented = <T extends z.ZodType>(schema: T): T => schema.clone() as T;

export const ProxyBody = documented(ProxyResource).openapi('Proxy', {
  description: 'A proxy: its desired state (spec, written through this API) and its observed state (status).',
});

export const Spec = documented(ProxySpec).openapi('ProxySpec');

export const CreateProxyRequest = z
  .object({ name: documented(ProxyName).openapi({ example: 'us-east-1' }), spec: Spec })
  .strict()
  .openapi('CreateProxyRequest');

export const SpecMergePatch = z.record(z.string(), z.unknown()).openapi('ProxySpecMergePatch', {
  description:
    'RFC 7396 JSON merge patch of ProxySpec: objects merge, null removes a member. The result is validated as a ProxySpec; mode cannot change.',
  example: { capacity: 8, attributes: { region: 'eu', legacy: null } },
});

export const NameParam = z.object({
  name: documented(ProxyName).openapi({ param: { name: 'name', in: 'path' }, example: 'us-east-1' }),
});

/**
 * `If-Match` (RFC 9110 §13.1.1) on the writes of one proxy: `*` or a list of its ETags
 * (`"<generation>.<uid>"`). Malformed → 400 invalid_request at `If-Match` (the validator matches header
 * names case-insensitively).
 */
export const IfMatchHeader = ifMatchHeader({
  example: '"7.0b5e2c1a-9d4f-4e8b-a1c3-5f6e7d8c9b0a"',
  description:
    'Only if the proxy is still the one and at the generation its ETag named: `"<generation>.<uid>"` as the ETag gave it (a list: any of them; `*`: any). A proxy deleted and created again under its name is another proxy: no tag of the first matches it. Otherwise 412 precondition_failed and nothing is written. A weak tag (`W/"7…"`) never matches.',
});

const ATTR_PREFIX = 'attr.';
export const LIST_QUERY_HINT = 'use phase, healthy, leasable, protocol, attr.<key>, pageSize or pageToken';
const NAMED = new Set(['phase', 'healthy', 'leasable', 'protocol', 'pageSize', 'pageToken']);
const PAGE_SIZE = `pageSize must be an integer in 1–${MAX_LIST_PAGE_SIZE}`;

/** The names ListQuery takes, checked on the raw query string too (middleware/query-names.ts). */
export const isListQueryName = (name: string) => NAMED.has(name) || name.startsWith(ATTR_PREFIX);

/** `?phase=P&attr.k=v…`: every parameter other than phase must be attr.<attribute key>. */
export const ListQuery = z
  .object({
    phase: documented(Phase)
      .optional()
      .openapi({ param: { name: 'phase', in: 'query' } }),
    healthy: z
      .enum(['true', 'false'])
      .optional()
      .openapi({
        param: { name: 'healthy', in: 'query' },
        description:
          'Only proxies healthy and reachable (true), or only the others (false): the health a lease needs.',
      }),
    leasable: z
      .enum(['true', 'false'])
      .optional()
      .openapi({
        param: { name: 'leasable', in: 'query' },
        description:
          'Only proxies a lease could go to now, capacity and cooldowns aside: healthy, not cordoned and not held by the gateway (true), or only the others (false).',
      }),
    protocol: documented(ProxyProtocol)
      .optional()
      .openapi({
        param: { name: 'protocol', in: 'query' },
        description:
          'Only proxies speaking it (managed proxies speak `http`; external ones their `endpoint.protocol`): what a lease asking for that protocol would consider.',
      }),
    // Decimal digits only: Number() would also read ' 1', '0x10' and '1e2' as sizes.
    pageSize: z
      .string()
      .regex(/^[0-9]{1,10}$/, PAGE_SIZE)
      .transform(Number)
      .pipe(z.number().int().min(1, PAGE_SIZE).max(MAX_LIST_PAGE_SIZE, PAGE_SIZE))
      .optional()
      .openapi({
        param: { name: 'pageSize', in: 'query' },
        type: 'integer',
        minimum: 1,
        maximum: MAX_LIST_PAGE_SIZE,
        description: `Page the listing: at most this many proxies read for the page, in name order; the answer's \`nextPageToken\` asks for the next page. Without pageSize and pageToken the listing is not paged (every matching proxy, one answer). With a pageToken alone: ${DEFAULT_LIST_PAGE_SIZE}.`,
      }),
    pageToken: z
      .string()
      .regex(/^[A-Za-z0-9_-]{1,2048}$/, 'not a page token')
      .transform((token, ctx) => {
        const read = readPageToken(token);
        if (read === null) ctx.addIssue({ code: 'custom', message: 'not a page token' });
        return read ?? z.NEVER;
      })
      .optional()
      .openapi({
        param: { name: 'pageToken', in: 'query' },
        description:
          'The `nextPageToken` of the page before, with the same filters (another filter: 400 invalid_request); pageSize may change.',
      }),
  })
  .catchall(z.string())
  .superRefine((query, ctx) => {
    const attributes: Record<string, string> = {};
    for (const [key, value] of Object.entries(query)) {
      if (NAMED.has(key)) continue;
      if (!key.startsWith(ATTR_PREFIX)) {
        ctx.addIssue({
          code: 'custom',
          path: [key],
          message: `unknown query parameter (${LIST_QUERY_HINT})`,
        });
      } else if (FORBIDDEN_KEYS.has(key.slice(ATTR_PREFIX.length))) {
        ctx.addIssue({ code: 'custom', path: [key], message: 'forbidden attribute key' });
      } else {
        attributes[key.slice(ATTR_PREFIX.length)] = value as string;
      }
    }
    const parsed = Attributes.safeParse(attributes);
    if (!parsed.success) {
      for (const issue of parsed.error.issues) {
        ctx.addIssue({
          code: 'custom',
          path: [`${ATTR_PREFIX}${String(issue.path[0] ?? '')}`],
          message: issue.message,
        });
      }
    }
  });

/** The attribute filter in a validated ListQuery. */
export function attributeFilter(query: Record<string, unknown>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(query)
      .filter(([k]) => k.startsWith(ATTR_PREFIX))
      .map(([k, v]) => [k.slice(ATTR_PREFIX.length), String(v)]),
  );
}

/** The filters of a validated ListQuery, as a page token is bound to them (list-paging.ts). */
export const listFilters = (query: {
  phase?: string;
  healthy?: string;
  leasable?: string;
  protocol?: string;
}): ListFilters => ({
  phase: query.phase,
  healthy: query.healthy,
  leasable: query.leasable,
  protocol: query.protocol,
  attributes: attributeFilter(query),
});

/** A proxy as listed: plus discovery's health verdict and active lease count (discovery/list.ts). */
export const ListedProxyBody = ProxyBody.extend({
  healthy: z.boolean(),
  leasable: z.boolean().openapi({
    description:
      'Healthy, not cordoned (spec.cordoned) and not held by the gateway (a gateway-pool proxy not reclaimed, or one a gateway worker still owns).',
  }),
  activeLeases: z.number().int().openapi({
    description:
      'Leases counting against its capacity now; its capacity when `leaseStateInvalid` (it counts as full).',
  }),
  leaseStateInvalid: z.literal(true).optional().openapi({
    description:
      'Only when so: its stored lease state (leaseState/{name}) does not decode (edited by hand), so no lease is granted on it and `activeLeases` shows it full, until the document is fixed or deleted.',
  }),
}).openapi('ListedProxy');

const StoredIssueBody = z.object({ path: z.string(), code: z.string(), message: z.string() });

/**
 * `{proxies, count}`: one listing for admins and crawlers; `skipped` only for admins, only when any (of a
 * page: the documents that page read); `nextPageToken` only on a paged listing.
 */
export const ProxyList = z
  .object({
    proxies: z.array(ListedProxyBody),
    count: z.number().int().openapi({
      description: 'How many proxies this answer lists (of a paged listing: this page).',
    }),
    nextPageToken: z.string().nullable().optional().openapi({
      description:
        'Paged listings only (pageSize or pageToken given): the pageToken of the next page; null on the last. A page may list fewer than pageSize proxies, even none, when healthy, leasable or protocol left some out, or when its proxies reached 16 MiB of JSON: follow the token until null.',
    }),
    skipped: z
      .object({ count: z.number().int(), names: z.array(z.string()) })
      .optional()
      .openapi({
        description:
          'Admins only, and only when there are any: documents the query matched that do not fit the model, left out of `proxies` (GET one for why; DELETE removes it). `names` lists at most 100.',
      }),
    redacted: z.array(z.literal('spec.cloudInit')).optional().openapi({
      description:
        "Crawler tokens only: the fields left out of every proxy's spec. Such a listing is not a copy of the specs: `proxyplane proxies apply` refuses it (applied, it would remove each proxy's own cloud-init).",
    }),
  })
  .openapi('ProxyList');

/** DELETE of a proxy whose stored document does not fit the model (admin/proxy-admin.ts). */
export const InvalidProxyDeletionBody = z
  .object({
    name: ProxyName,
    uid: z.string().nullable().openapi({
      description:
        "When readable: its instance is `pp-` and the uid's first 20 hex digits — unless another proxy holds the same uid (a copied document), whose instance that is.",
    }),
    deletionRequestedAt: z.string().openapi({ format: 'date-time' }),
    storedProxyInvalid: z.object({ issues: z.array(StoredIssueBody) }),
  })
  .openapi('InvalidProxyDeletion', {
    description:
      'Deletion requested of a stored document that does not fit the model: reconcile removes the document, the orphan GC its instance — unless the GC’s brake refuses its sweeps, and then an operator by hand (docs/api.md § Delete).',
  });

export const ReconcileAccepted = z
  .object({ proxy: ProxyName, reason: z.literal('manual') })
  .openapi('ReconcileAccepted');

export const ErrorBody = z
  .object({
    error: z.string().openapi({ description: 'Stable machine-readable code (docs/api.md#errors).' }),
    message: z.string(),
    issues: z
      .array(z.object({ path: z.string(), code: z.string(), message: z.string() }))
      .optional()
      .openapi({
        description:
          'For invalid_request, immutable_field and port_not_allowed: one entry per problem; for stored_proxy_invalid: one per field of the stored document that does not fit (never its value).',
      }),
    allowedPorts: z
      .array(z.number().int())
      .optional()
      .openapi({ description: 'For port_not_allowed: the ports a managed proxy may listen on.' }),
    generation: z.number().int().optional().openapi({
      description: "For precondition_failed: the proxy's current generation.",
    }),
    etag: z.string().optional().openapi({
      description:
        'For precondition_failed on a proxy: its current ETag (`"<generation>.<uid>"`), what If-Match names to write over it.',
    }),
    revision: z.number().int().optional().openapi({
      description:
        "For precondition_failed on PUT /v1/gateway/routing: the routing's current revision (its ETag, unquoted).",
    }),
    revokeProxyIds: z.array(z.string()).optional().openapi({
      description:
        "For stale_epoch on a worker's runtime report: the proxies it must stop using now (contract §3), as a snapshot's revokeProxyIds.",
    }),
    supported: z
      .object({ min: z.number().int(), max: z.number().int() })
      .optional()
      .openapi({ description: 'For unsupported_protocol_version: the protocol versions the API speaks.' }),
    requestId: z.string().optional(),
  })
  .openapi('Error');
